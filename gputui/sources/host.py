"""Host readings through psutil: the CPU side of the input pipeline, and GPU processes.

psutil's CPU percentages are deltas since the previous call on the same object, so the
reader keeps its ``Process`` objects between ticks; the first reading of a process is
therefore None rather than a made-up 0.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import psutil

from gputui.model import HostSample, Note, ProcessSample
from gputui.names import NoteKind

# Command lines can be huge (100 KB of arguments); the UI and the snapshot need a head.
MAX_COMMAND_CHARS = 4096

# The only environment variables gputui reads (the rest may hold secrets).
CUDA_ENV_VARS = (
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_VISIBLE_DEVICES",
    "PYTORCH_CUDA_ALLOC_CONF",
    "OMP_NUM_THREADS",
    "NCCL_P2P_DISABLE",
    "NCCL_IB_DISABLE",
)
_CUDART = re.compile(r"libcudart\.so\.(\d+(?:\.\d+)?)")


def cuda_facts(pid: int) -> tuple[str | None, tuple[str, ...]]:
    """The CUDA runtime a process mapped and its CUDA variables; nothing if not permitted."""
    runtime: str | None = None
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                if "libcudart" in line:
                    match = _CUDART.search(line)
                    if match:
                        runtime = match.group(1)
                        break
    except OSError:
        pass
    env: list[str] = []
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = handle.read()
        for item in raw.split(b"\0"):
            name, _, value = item.partition(b"=")
            key = name.decode("ascii", "replace")
            if key in CUDA_ENV_VARS:
                env.append(f"{key}={value.decode('utf-8', 'replace')}")
    except OSError:
        pass
    return runtime, tuple(sorted(env))


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """What the GPU side knows of a process: pid, GPU, memory, compute or graphics."""

    pid: int
    gpu_index: int
    gpu_memory: int | None
    kind: str


def _uses_nvidia_device(pid: int) -> bool | None:
    """Whether ``pid`` holds an NVIDIA device open; None if we may not look."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except (PermissionError, FileNotFoundError, ProcessLookupError, NotADirectoryError):
        return None
    except OSError:
        return None
    for name in names:
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith("/dev/nvidia"):
            return True
    return False


class HostReader:
    """Reads the host sample and joins GPU processes with their host details."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        device_check: Callable[[int], bool | None] = _uses_nvidia_device,
    ) -> None:
        self._clock = clock
        self._device_check = device_check
        self._procs: dict[int, psutil.Process] = {}
        self._foreign: dict[tuple[int, float], bool] = {}
        self._cuda: dict[int, tuple[str | None, tuple[str, ...]]] = {}
        self._cuda_facts = cuda_facts
        self._last_disk: tuple[float, int] | None = None
        self._hostname = socket.gethostname()
        # Prime psutil's deltas so the first real reading is meaningful.
        psutil.cpu_percent(percpu=True)
        psutil.cpu_times_percent()

    def read_host(self) -> HostSample:
        per_cpu = tuple(float(v) for v in psutil.cpu_percent(percpu=True))
        total = sum(per_cpu) / len(per_cpu) if per_cpu else None
        times = psutil.cpu_times_percent()
        iowait = getattr(times, "iowait", None)
        try:
            load = os.getloadavg()
        except OSError:
            load = (float("nan"),) * 3
        vm = psutil.virtual_memory()
        sw = psutil.swap_memory()
        return HostSample(
            cpu_percent=total,
            per_cpu_percent=per_cpu,
            cpu_count=len(per_cpu) or None,
            load_1=load[0],
            load_5=load[1],
            load_15=load[2],
            mem_total=int(vm.total),
            mem_available=int(vm.available),
            swap_total=int(sw.total),
            swap_used=int(sw.used),
            iowait_pct=float(iowait) if iowait is not None else None,
            disk_read_bps=self._disk_read_rate(),
            hostname=self._hostname,
        )

    def _disk_read_rate(self) -> float | None:
        try:
            counters = psutil.disk_io_counters()
        except (OSError, RuntimeError):
            return None
        if counters is None:
            return None
        now = self._clock()
        previous = self._last_disk
        self._last_disk = (now, int(counters.read_bytes))
        if previous is None or now <= previous[0]:
            return None
        return max(0.0, (counters.read_bytes - previous[1]) / (now - previous[0]))

    def join_processes(
        self, gpu_processes: Iterable[GpuProcess]
    ) -> tuple[tuple[ProcessSample, ...], tuple[Note, ...]]:
        """Host details for each GPU process, and notes on what could not be resolved.

        Inside a container without the host's PID namespace NVML reports PIDs that are
        not ours: such a PID is either absent here or belongs to a process that has no
        NVIDIA device open. Those are marked invisible instead of showing a stranger.
        """
        samples: list[ProcessSample] = []
        seen: set[int] = set()
        for gp in gpu_processes:
            seen.add(gp.pid)
            base = ProcessSample(
                pid=gp.pid, gpu_index=gp.gpu_index, gpu_memory=gp.gpu_memory, kind=gp.kind
            )
            samples.append(self._with_details(base))
        for pid in list(self._procs):
            if pid not in seen:
                del self._procs[pid]
                self._cuda.pop(pid, None)
        hidden = sum(1 for s in samples if not s.visible)
        notes: tuple[Note, ...] = ()
        if hidden:
            notes = (
                Note(
                    NoteKind.PID_NAMESPACE,
                    f"{hidden} GPU process(es) are not visible in this PID namespace "
                    "(a container without --pid=host?): their host details are unknown.",
                ),
            )
        return tuple(samples), notes

    def _with_details(self, base: ProcessSample) -> ProcessSample:
        pid = base.pid
        proc = self._procs.get(pid)
        try:
            if proc is None:
                try:
                    proc = psutil.Process(pid)
                except psutil.NoSuchProcess:
                    # NVML knows it, we do not: it lives in another PID namespace.
                    return replace(base, visible=False)
                if self._is_foreign(proc):
                    return replace(base, visible=False)
                self._procs[pid] = proc
                proc.cpu_percent()
                # Read once per process: its mapped libraries and environment are fixed
                # once CUDA is initialised.
                self._cuda[pid] = self._cuda_facts(pid)
                cpu: float | None = None
            else:
                cpu = proc.cpu_percent()
            with proc.oneshot():
                return replace(
                    base,
                    name=_safe(proc.name),
                    user=_safe(proc.username),
                    command=_command(proc),
                    cpu_percent=cpu,
                    rss=int(proc.memory_info().rss),
                    threads=proc.num_threads(),
                    children=_children(proc),
                    cuda_runtime=self._cuda.get(pid, (None, ()))[0],
                    env=self._cuda.get(pid, (None, ()))[1],
                )
        except psutil.NoSuchProcess:
            # Exited between NVML's listing and our lookup: keep NVML's facts only.
            self._procs.pop(pid, None)
            return base
        except psutil.AccessDenied:
            return base

    def _is_foreign(self, proc: psutil.Process) -> bool:
        try:
            key = (proc.pid, proc.create_time())
        except psutil.Error:
            return True
        verdict = self._foreign.get(key)
        if verdict is None:
            uses = self._device_check(proc.pid)
            verdict = uses is False
            if len(self._foreign) > 4096:
                self._foreign.clear()
            self._foreign[key] = verdict
        return verdict


def _safe(getter: Callable[[], str]) -> str | None:
    try:
        return getter()
    except (psutil.Error, KeyError):
        return None


def _command(proc: psutil.Process) -> str | None:
    try:
        parts = proc.cmdline()
    except psutil.Error:
        return None
    # Arguments are bytes to the kernel; psutil keeps undecodable ones as surrogates,
    # which could not be printed or written as UTF-8.
    command = " ".join(parts).encode("utf-8", "backslashreplace").decode("utf-8")
    if len(command) > MAX_COMMAND_CHARS:
        command = command[:MAX_COMMAND_CHARS] + "…"
    return command or None


def _children(proc: psutil.Process) -> int | None:
    try:
        return len(proc.children())
    except psutil.Error:
        return None
