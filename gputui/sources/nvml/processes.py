"""The processes on a GPU: NVML's process lists in the layout each driver writes, and the
driver's per-process SM utilisation samples."""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path
from typing import Any

import pynvml

from gputui.core.config import PROCESS_UTIL_PERIOD_S
from gputui.core.records import frozen
from gputui.sources.nvml.bindings import clean, percent
from gputui.sources.nvml.policy import Gpu, GpuLost, Query, Verdict, meaning

PROCESS_EXTRA_PERIOD_S = 10.0  # graphics and MPS process lists, while they are empty
_PROCESS_UTIL_MAX_ROOM = 8192  # never more, whatever count the driver claims


class ProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t, what the unversioned process functions fill (16 bytes)."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class ProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t: what _v2 fills, and _v3 on drivers from R550 (24 bytes)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class ProcessInfoR535(ctypes.Structure):
    """What R535 drivers' _v3 functions fill: 32 bytes, with usedGpuCcProtectedMemory,
    under the same function name and without a version field."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


_ENTRY_STRUCTS: dict[int, type[ctypes.Structure]] = {
    ctypes.sizeof(ProcessInfoV1): ProcessInfoV1,
    ctypes.sizeof(ProcessInfoV2): ProcessInfoV2,
    ctypes.sizeof(ProcessInfoR535): ProcessInfoR535,
}
ENTRY_V1 = ctypes.sizeof(ProcessInfoV1)
ENTRY_V2 = ctypes.sizeof(ProcessInfoV2)
ENTRY_R535 = ctypes.sizeof(ProcessInfoR535)
# The process lists gputui reads: (kind, the functions' middle name).
PROCESS_KINDS = (
    ("compute", "ComputeRunningProcesses"),
    ("graphics", "GraphicsRunningProcesses"),
    ("mps", "MPSComputeRunningProcesses"),
)
_NO_INSTANCE = 0xFFFFFFFF


def _pid_max() -> int:
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text().strip())
    except (OSError, ValueError):
        return 4_194_304  # Linux's largest


_PID_MAX = _pid_max()


@functools.lru_cache(maxsize=64)
def _array(item: type[Any], length: int) -> type[ctypes.Array[Any]]:
    """``item * length``, made once: ctypes keeps array types only while something holds
    them, so each tick made its buffers' types again (and left them to the collector)."""
    return item * length  # type: ignore[no-any-return]


@frozen
class Proc:
    pid: int
    memory: int | None
    gpu_instance: int | None
    compute_instance: int | None


def processes(q: Query, gpu: Gpu) -> list[tuple[str, Proc]]:
    """(kind, process) on this GPU: compute every tick; graphics and MPS clients every
    tick while there are some, else every ``PROCESS_EXTRA_PERIOD_S``."""
    found: dict[int, tuple[str, Proc]] = {}
    for kind, _ in PROCESS_KINDS:
        if (
            kind != "compute"
            and not gpu.process_seen.get(kind)
            and not q.due(gpu, "procs." + kind, PROCESS_EXTRA_PERIOD_S)
        ):
            for proc in gpu.cache.get("procs." + kind, ()):
                _merge(found, kind, proc)
            continue
        answer = _process_list(q, gpu, kind)
        if kind == "compute":  # the list training runs on: unreadable is not "none"
            gpu.processes_unread = answer is None and bool(gpu.process_fns.get(kind))
        listed = answer or []
        gpu.process_seen[kind] = bool(listed)
        gpu.cache["procs." + kind] = listed
        for proc in listed:
            _merge(found, kind, proc)
    return list(found.values())


def _merge(found: dict[int, tuple[str, Proc]], kind: str, proc: Proc) -> None:
    """One entry per PID; its kind names every list it is on ("compute+graphics")."""
    existing = found.get(proc.pid)
    if existing is None:
        found[proc.pid] = (kind, proc)
        return
    old_kind, old = existing
    kinds = {*old_kind.split("+"), kind}
    merged = "+".join(k for k, _ in PROCESS_KINDS if k in kinds)
    memory = old.memory if old.memory is not None else proc.memory
    found[proc.pid] = (
        merged,
        Proc(proc.pid, memory, old.gpu_instance, old.compute_instance),
    )


def _process_list(q: Query, gpu: Gpu, kind: str) -> list[Proc] | None:
    """The processes of one kind, through the newest process function the driver has,
    called with this module's own entry structs in the layout that driver writes.

    The layout is resolved at open (R535's 32-byte _v3 entries; see
    ``bindings.r535_process_layout``) and checked on every answer: a PID that no process
    can have makes the other layout be tried on the same buffer, and kept if it reads
    right."""
    candidates = gpu.process_fns.get(kind) or []
    key = "procs." + kind
    while candidates and not q.skip(gpu, key):
        symbol, size = candidates[0]
        try:
            fn = pynvml._nvmlGetFunctionPointer(symbol)
        except pynvml.NVMLError:
            candidates.pop(0)
            continue
        room = gpu.process_room.get(kind, 8)
        for _attempt in range(2):
            buffer = _array(ctypes.c_ubyte, room * ENTRY_R535)()  # room for any layout
            count = ctypes.c_uint(room)
            q.calls += 1
            ret = fn(gpu.handle, ctypes.byref(count), buffer)
            if ret != pynvml.NVML_ERROR_INSUFFICIENT_SIZE:
                break
            room = count.value * 2 + 8  # processes may start between the two calls
        gpu.process_room[kind] = max(8, min(room, count.value * 2 + 8))
        if ret == pynvml.NVML_SUCCESS:
            n = min(count.value, room)
            procs = parse_processes(buffer, size, n, gpu.memory_total)
            if procs is None and size in (ENTRY_V2, ENTRY_R535) and symbol.endswith("_v3"):
                other = ENTRY_R535 if size == ENTRY_V2 else ENTRY_V2
                procs = parse_processes(buffer, other, n, gpu.memory_total)
                if procs is not None:
                    candidates[0] = (symbol, other)
            if procs is None:  # no layout reads right: keep what is plausible
                procs = parse_processes(buffer, size, n, gpu.memory_total, strict=False)
            return procs
        verdict = meaning(ret)
        if verdict is Verdict.LOST:
            raise GpuLost
        if verdict is Verdict.STOP:
            candidates.pop(0)  # an older version of the function, or none
            continue
        q.failed(gpu, key, ret)
        return None
    return None


def parse_processes(
    buffer: Any, size: int, count: int, memory_total: int | None, strict: bool = True
) -> list[Proc] | None:
    """Entries of ``size`` bytes; None (when ``strict``) if any PID is implausible."""
    layout = _ENTRY_STRUCTS[size]
    if count * size > ctypes.sizeof(buffer):
        return None
    out = []
    for i in range(count):
        # from_buffer, not a cast: ctypes.cast ties the two objects in a reference cycle
        # that only the garbage collector frees (a tick's worth for every GPU)
        entry = layout.from_buffer(buffer, i * size)
        pid = int(entry.pid)
        memory = clean(int(entry.usedGpuMemory))
        plausible = 0 < pid <= _PID_MAX and (
            memory is None or memory_total is None or memory <= memory_total
        )
        if not plausible:
            if strict:
                return None
            continue
        gi = ci = None
        if size != ENTRY_V1:
            gi = int(entry.gpuInstanceId)
            ci = int(entry.computeInstanceId)
        out.append(
            Proc(
                pid,
                memory,
                gi if gi != _NO_INSTANCE else None,
                ci if ci != _NO_INSTANCE else None,
            )
        )
    return out


def process_util(q: Query, gpu: Gpu, procs: list[tuple[str, Proc]]) -> dict[int, float]:
    """PID -> SM % of the GPU's processes, read every ``PROCESS_UTIL_PERIOD_S`` while it
    has some (the last answer in between); {} where the driver gives no figure."""
    if not procs:
        return {}
    read = functools.partial(_read_process_util, q, gpu)
    return q.every(gpu, "process_util", PROCESS_UTIL_PERIOD_S, read) or {}


def _read_process_util(q: Query, gpu: Gpu) -> dict[int, float]:
    """The driver's per-process samples newer than the newest one seen (all it keeps, the
    first time), the newest per PID: one call with a buffer sized beforehand (the
    bindings' wrapper makes two). Not supported, no permission or a driver without the
    function leave {} under the one policy; NOT_FOUND is "no sample since then"."""
    key = "process_util"
    if q.skip(gpu, key):
        return {}
    fn = q.symbol(gpu, key, "nvmlDeviceGetProcessUtilization")
    if fn is None:
        return {}
    room = gpu.process_util_room
    for _attempt in range(2):
        buffer = _array(pynvml.c_nvmlProcessUtilizationSample_t, room)()
        count = ctypes.c_uint(room)
        q.calls += 1
        ret = fn(
            gpu.handle,
            buffer,
            ctypes.byref(count),
            ctypes.c_ulonglong(gpu.process_util_seen),
        )
        if ret != pynvml.NVML_ERROR_INSUFFICIENT_SIZE or room >= _PROCESS_UTIL_MAX_ROOM:
            break
        # processes may start between the two calls
        room = min(_PROCESS_UTIL_MAX_ROOM, max(room * 2, count.value + 16))
        gpu.process_util_room = room
    if ret == pynvml.NVML_ERROR_NOT_FOUND:
        return {}  # no sample since the newest one seen
    if ret != pynvml.NVML_SUCCESS:
        q.failed(gpu, key, ret)
        return {}
    newest: dict[int, tuple[int, float | None]] = {}
    seen = gpu.process_util_seen
    for entry in buffer[: min(count.value, room)]:
        stamp = int(entry.timeStamp)
        seen = max(seen, stamp)
        pid = int(entry.pid)
        kept = newest.get(pid)
        if kept is None or stamp >= kept[0]:
            newest[pid] = (stamp, percent(int(entry.smUtil)))
    gpu.process_util_seen = seen
    return {pid: value for pid, (_, value) in newest.items() if value is not None}
