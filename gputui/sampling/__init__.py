"""Sampling: one source read per tick, the bounded history, and the monitor over both."""
