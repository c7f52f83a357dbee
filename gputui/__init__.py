"""gputui: a terminal GPU monitor that says why a training job is slow."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    # ``gputui.watch`` (the training-loop API) loads when first asked for, never on the
    # app's start; by name, as every layer reads __version__ here and none may import it
    if name == "watch":
        return importlib.import_module("gputui.api.watch").watch
    raise AttributeError(f"module 'gputui' has no attribute {name!r}")
