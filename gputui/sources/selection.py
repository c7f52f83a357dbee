"""A source narrowed to the GPUs ``--only`` names (as nvitop's ``--only``): every frame and
fact of the others left out, for every command and the screen alike.

The wrapped source keeps the capabilities it has (``core/source.py``'s protocols are
asked with ``isinstance``, which looks for the methods): the ones that hand out frames
(``glance``, ``backfill``, ``catch_up``) hand out narrowed frames, the rest pass through.
GPUs keep their own indices (GPU 3 stays GPU 3, as NVML and nvidia-smi number it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any

from gputui.core.judgement import gpu_list
from gputui.core.model import DeviceInfo, Frame
from gputui.core.source import Source, SourceUnavailable

#: the capabilities whose answers are frames: narrowed like ``read``'s
_FRAMES = ("glance", "backfill", "catch_up")


def parse_only(text: str) -> tuple[int, ...]:
    """'0,2-3' -> (0, 2, 3): GPU indices and ranges, in order, each once; ValueError with
    what was wrong otherwise."""
    found: list[int] = []
    for part in text.replace(" ", "").split(","):
        first, dash, last = part.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise ValueError(f"{part!r} is not a GPU index or a range of them (0,2-3)")
        low, high = int(first), int(last) if dash else int(first)
        if high < low or high - low > 4096:
            raise ValueError(f"{part!r} is not a range of GPU indices")
        found += [i for i in range(low, high + 1) if i not in found]
    return tuple(found)


def narrowed_frame(frame: Frame, keep: Collection[int]) -> Frame:
    """``frame`` with only the GPUs ``keep`` names: their readings, their processes, their
    facts, and the history that came with them."""
    return dataclasses.replace(
        frame,
        gpus=tuple(g for g in frame.gpus if g.index in keep),
        processes=tuple(p for p in frame.processes if p.gpu_index in keep),
        joined=tuple(d for d in frame.joined if d.index in keep),
        late=tuple(narrowed_frame(f, keep) for f in frame.late),
        processes_unread=tuple(i for i in frame.processes_unread if i in keep),
    )


class Only:
    """``source`` with only the GPUs ``indices`` names; opening it on a node without one of
    them says which it has."""

    def __init__(self, source: Source, indices: Sequence[int]) -> None:
        self._source = source
        self._keep = frozenset(indices)
        self._asked = tuple(indices)
        self.label = source.label
        self.kind = source.kind

    def open(self) -> tuple[DeviceInfo, ...]:
        devices = self._source.open()
        present = {d.index for d in devices}
        missing = [i for i in self._asked if i not in present]
        if missing:
            self._source.close()
            has = gpu_list(sorted(present)) if present else "no GPU"
            raise SourceUnavailable(f"--only: this node has no {gpu_list(missing)} (it has {has})")
        return tuple(d for d in devices if d.index in self._keep)

    def read(self) -> Frame:
        return narrowed_frame(self._source.read(), self._keep)

    def close(self) -> None:
        self._source.close()

    def __getattr__(self, name: str) -> Any:
        """The wrapped source's other capabilities, those that hand out frames narrowed;
        an AttributeError (so ``isinstance`` says no) where it has none of that name."""
        found = getattr(self._source, name)
        if name not in _FRAMES:
            return found
        return self._narrowing(found)

    def _narrowing(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            answer = method(*args)
            if isinstance(answer, Frame):
                return narrowed_frame(answer, self._keep)
            return [narrowed_frame(frame, self._keep) for frame in answer]

        return call
