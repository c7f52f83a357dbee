"""The Textual UI: it draws frames and findings; it never calls NVML or psutil."""
