"""Which GPUs a process watches: its own (a rank of a distributed job), the ones CUDA lets
it see, the whole node (on the node's first rank), or a list; and a source narrowed to them.

GPUs are named by NVML's index, as nvidia-smi numbers them. ``CUDA_VISIBLE_DEVICES``
entries are read as CUDA reads them: an index, or a UUID (``GPU-5f0c...``, a prefix is
enough); CUDA stops at the first entry it cannot use, and so does this. An index there is
NVML's where ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (CUDA's default order, fastest first, is the
same on a node of one GPU model, the usual case).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind
from gputui.core.source import Source

#: "own": this rank's GPU (the ``LOCAL_RANK``-th visible one); "visible": every GPU
#: ``CUDA_VISIBLE_DEVICES`` leaves this process; "node": every GPU of the node, watched by
#: the node's first rank alone (``LOCAL_RANK`` 0 or unset; the others watch none); "all":
#: every GPU NVML sees; "auto": "own" in a distributed launch (``LOCAL_RANK`` set), else
#: "visible"; or NVML indices
Choice: TypeAlias = Literal["own", "visible", "node", "all", "auto"]
Gpus: TypeAlias = Choice | Sequence[int]
CHOICES: tuple[str, ...] = ("own", "visible", "node", "all", "auto")


class NoSuchGpu(ValueError):
    """The GPUs asked for are not on this machine."""


def local_rank(env: Mapping[str, str] | None = None) -> int | None:
    """This process's rank on its node, as launchers say it (torchrun, Lightning, Slurm)."""
    env = os.environ if env is None else env
    for name in ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"):
        value = env.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return None


def visible(devices: Sequence[DeviceInfo], env: Mapping[str, str] | None = None) -> list[int]:
    """The GPUs ``CUDA_VISIBLE_DEVICES`` leaves this process, in CUDA's order (all of them,
    in NVML's order, when it is unset)."""
    env = os.environ if env is None else env
    text = env.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return [d.index for d in devices]
    out: list[int] = []
    by_index = {d.index for d in devices}
    for entry in (e.strip() for e in text.split(",")):
        found: int | None = None
        if entry.isdigit():
            found = int(entry) if int(entry) in by_index else None
        elif entry.upper().startswith("GPU-") and len(entry) > 4:
            found = next(
                (d.index for d in devices if d.uuid and d.uuid.lower().startswith(entry.lower())),
                None,
            )
        if found is None or found in out:
            break  # CUDA ignores an entry it cannot use and every one after it
        out.append(found)
    return out


def choose(
    devices: Sequence[DeviceInfo],
    gpus: Gpus,
    env: Mapping[str, str] | None = None,
    rank: int | None = None,
) -> tuple[int, ...]:
    """The NVML indices to watch (none: this rank leaves the node to its first rank).
    ``rank``: this process's rank on the node where the caller knows it (a framework's
    device index), else ``LOCAL_RANK`` and its kin."""
    env = os.environ if env is None else env
    known = [d.index for d in devices]
    if not isinstance(gpus, str):
        missing = [i for i in gpus if i not in known]
        if missing:
            raise NoSuchGpu(f"no GPU {missing} here: the GPUs are {known}")
        return tuple(dict.fromkeys(gpus))
    if gpus not in CHOICES:
        raise ValueError(f"gpus must be one of {', '.join(CHOICES)} or a list of indices")
    rank = local_rank(env) if rank is None else rank
    if gpus == "auto":
        gpus = "own" if rank is not None else "visible"
    if gpus == "all":
        return tuple(known)
    if gpus == "node":
        return tuple(known) if not rank else ()
    seen = visible(devices, env)
    if gpus == "visible":
        return tuple(seen)
    position = rank or 0
    if position >= len(seen):
        raise NoSuchGpu(
            f"local rank {position} has no GPU of its own: this process sees {len(seen)} "
            f"(CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', 'unset')})"
        )
    return (seen[position],)


class Only:
    """An opened source narrowed to some of its GPUs: their readings, their processes,
    their facts (each GPU keeps its NVML index). The rest of a frame (the host, the jobs'
    settings) passes as it is."""

    def __init__(
        self, source: Source, devices: Sequence[DeviceInfo], indices: Sequence[int]
    ) -> None:
        self._source = source
        self._keep = frozenset(indices)
        self._devices = tuple(d for d in devices if d.index in self._keep)
        self.label: str = source.label
        self.kind: SourceKind = source.kind

    def open(self) -> tuple[DeviceInfo, ...]:
        """The narrowed facts: the source itself was opened before it was narrowed."""
        return self._devices

    def read(self) -> Frame:
        frame = self._source.read()
        keep = self._keep
        return dataclasses.replace(
            frame,
            gpus=tuple(s for s in frame.gpus if s.index in keep),
            processes=tuple(p for p in frame.processes if p.gpu_index in keep),
            joined=tuple(d for d in frame.joined if d.index in keep),
            processes_unread=tuple(i for i in frame.processes_unread if i in keep),
        )

    def close(self) -> None:
        self._source.close()
