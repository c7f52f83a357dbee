"""Standard output as a headless command writes it: a write that fails is said plainly,
with its own exit status, never as an internal error.

A report to a full disk (``> /dev/full``) ended in "internal error", exit 70; a command
run with its standard output closed (``>&-``) wrote nothing, and `completion` said 0. While
a command runs, ``sys.stdout`` is ``Guarded``: a write or flush that fails raises
``OutputError`` (a reader that left a pipe stays ``BrokenPipeError``, exit 141), and so does
any write at all where there is no standard output.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import TextIO, TypeVar, cast

T = TypeVar("T")


class OutputError(Exception):
    """Standard output could not be written: why, in words."""


class Guarded(io.TextIOBase):
    """``stream`` (None: standard output is closed) with its failures as ``OutputError``."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        stream = self._open()
        return _failing_as_output(lambda: stream.write(text))

    def flush(self) -> None:
        if self._stream is not None:
            _failing_as_output(self._stream.flush)

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def fileno(self) -> int:
        return self._open().fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    def _open(self) -> TextIO:
        if self._stream is None:
            raise OutputError("standard output is closed")
        return self._stream


def _failing_as_output(call: Callable[[], T]) -> T:
    """``call()``, a failure of it ``OutputError`` (a reader gone from a pipe stays
    ``BrokenPipeError``)."""
    try:
        return call()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise OutputError(_why(exc)) from exc


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc) or type(exc).__name__


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """``sys.stdout`` guarded while the block runs, flushed at its end (a full disk shows
    at the last write, not at the interpreter's exit)."""
    real = sys.stdout
    sys.stdout = cast(TextIO, Guarded(real))
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = real


def drop_stdout() -> None:
    """What is left in standard output's buffer goes nowhere: the interpreter's last
    flush at exit must not fail again (it would turn the status into 120)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
