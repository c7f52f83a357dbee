"""Data formats: the snapshot document and the recording codec, read and written by both sides."""
