"""gputui: a terminal GPU monitor that says why a training job is slow."""

__version__ = "0.2.0"
