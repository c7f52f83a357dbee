"""Exporters read the same frames (and findings) as the UI: snapshot, record, metrics."""
