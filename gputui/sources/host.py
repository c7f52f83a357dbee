"""Host readings: the CPU side of the input pipeline, and GPU processes.

The machine's readings (``machine``: CPU times, memory, swap, disks, from /proc), each GPU
process and its workers every tick from /proc/PID/stat (``proc_stat``), their names,
owners and command lines every few seconds, from /proc too. CPU percentages are deltas
between two readings, so the first reading of a process is None rather than a made-up 0.
"""

from __future__ import annotations

import os
import pwd
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from gputui.core.config import WORKER_ACTIVE_PCT
from gputui.core.model import HostSample, Note, ProcessSample
from gputui.core.names import NoteKind
from gputui.core.records import frozen
from gputui.sources import proc_files
from gputui.sources.cuda_facts import CudaFacts, process_facts
from gputui.sources.machine import (
    boot_time,
    cpu_shares,
    cpu_times,
    disk_read_bytes,
    loadavg,
    memory,
    swap,
)
from gputui.sources.placement import allowed_cpus, node_cpus, nodes_of, numa_memory, parse_cpu_list
from gputui.sources.proc_stat import (
    MAX_KEPT,
    TICKS_PER_S,
    CpuMeter,
    StatFiles,
    after_command,
    parse_cpu,
    parse_stat,
    read_small,
)

# Command lines can be huge (100 KB of arguments); the UI and the snapshot need a head.
MAX_COMMAND_CHARS = 4096


# -- NUMA: where a process may run and where its memory sits ------------------------------
NUMA_PERIOD_S = 10.0  # a process's CPU affinity, re-read this often
# Where its memory sits: numa_maps makes the kernel walk every page the process maps
# (seconds of CPU a minute for 8 ranks with tens of GB each at NUMA_PERIOD_S).
NUMA_MEMORY_PERIOD_S = 60.0
# Which processes are whose children (the data-loader workers): one pass over /proc for all
# GPU processes (psutil's children() makes that pass for each process it is asked about).
# A pass reads every process's stat file (a busy server has a thousand), so it is made this
# often while some GPU process has no workers yet (a job starting its data loaders) ...
TREE_PERIOD_S = 5.0
# ... this often once every GPU process has its workers, and at once when one of them
# exits (an epoch's end replaces them) or a new GPU process appears. Where the kernel lists
# a thread's children (/proc/PID/task/TID/children), "has it started workers?" is first
# asked of the process's main thread, which starts them (one file, not a thousand): the
# pass is made when that shows a child the last pass did not, else at this period.
TREE_STEADY_S = 30.0
# A process's name, owner and command line hardly change (a process retitling itself
# does): read this often, not every tick (the owner is a passwd lookup each time).
IDENTITY_PERIOD_S = 10.0
# Swap and disk counters move slowly and cost most of a host reading (psutil reads
# /proc/vmstat for swap, /proc/diskstats and sysfs for the disks): this often.
SLOW_HOST_PERIOD_S = 5.0


@frozen
class GpuProcess:
    """What the GPU side knows of a process: pid, GPU, memory, compute or graphics."""

    pid: int
    gpu_index: int
    gpu_memory: int | None
    kind: str
    #: % of the GPU's SMs it kept busy, where the driver says (nvmlDeviceGetProcessUtilization)
    sm_util: float | None = None

    def sample(self, **host: Any) -> ProcessSample:
        """The process as the frame holds it, with what the host says of it (``host``:
        ProcessSample's host fields; none where they are not read)."""
        return ProcessSample(
            pid=self.pid,
            gpu_index=self.gpu_index,
            gpu_memory=self.gpu_memory,
            kind=self.kind,
            sm_util=self.sm_util,
            **host,
        )


def _uses_nvidia_device(pid: int) -> bool | None:
    """Whether ``pid`` holds an NVIDIA device open; None if we may not look."""
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = proc_files.entries(fd_dir)
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


# NVML knows the PID, we do not: it lives in another PID namespace (or is not a GPU user).
_NOT_OURS: Final[dict[str, Any]] = {"visible": False}


class HostReader:
    """Reads the host sample and joins GPU processes with their host details."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        device_check: Callable[[int], bool | None] = _uses_nvidia_device,
        wall: Callable[[], float] = time.time,
        proc: str = "/proc",
        sys_block: str = "/sys/block",
        keep_files: bool = False,
    ) -> None:
        """``keep_files``: keep the processes' stat files open between ticks (gputui's own
        process only: see ``StatFiles``)."""
        self._clock = clock
        self._wall = wall
        self._proc = proc
        self._sys_block = sys_block
        self._boot = boot_time(proc)  # once: the uptime is then a subtraction per tick
        self._device_check = device_check
        self._procs: dict[int, int] = {}  # pid -> its start (clock ticks after boot)
        self._foreign: dict[tuple[int, int], bool] = {}
        self._cuda: dict[int, CudaFacts] = {}
        self._cpu = CpuMeter(clock)
        self._workers_meter = CpuMeter(clock)
        # the GPU processes' and their workers', kept open in gputui's own process only
        self._stat_files = StatFiles(proc, MAX_KEPT if keep_files else 0)
        self._cuda_facts = process_facts
        self._last_disk: tuple[float, int] | None = None
        self._slow: tuple[float, int, int, float | None] | None = None  # swap, disk rate
        self._hostname = socket.gethostname()
        self._nodes = node_cpus()
        self._numa: dict[int, tuple[float, dict[str, object]]] = {}
        self._numa_memory: dict[int, tuple[float, tuple[int, ...]]] = {}
        self._tree: tuple[float, dict[int, list[int]]] | None = None  # when, ppid -> pids
        self._tree_checked = 0.0  # when the tree was last made or confirmed
        self._tree_stale = False  # a worker exited or a GPU process appeared since the pass
        self._tree_settled = False  # every GPU process had workers in the last pass
        self._join_at = 0.0  # when the join under way started
        self._identity: dict[int, tuple[float, dict[str, object]]] = {}  # pid -> when, fields
        # The CPU times now, so the first reading has a delta to give.
        self._last_cpu = cpu_times(proc)

    def read_host(self, cpu: bool = True) -> HostSample:
        """The host's readings; ``cpu=False``: without the CPU shares (a first glance, a
        moment after this reader started: too short a span to measure them over)."""
        per_cpu: tuple[float, ...] = ()
        iowait: float | None = None
        if cpu:
            now = cpu_times(self._proc)
            per_cpu, iowait = cpu_shares(self._last_cpu, now)
            self._last_cpu = now
        total = sum(per_cpu) / len(per_cpu) if per_cpu else None
        load, run_queue = loadavg(f"{self._proc}/loadavg")
        mem_total, mem_available = memory(f"{self._proc}/meminfo")
        swap_total, swap_used, disk_read = self._slow_readings()
        return HostSample(
            cpu_percent=total,
            per_cpu_percent=per_cpu,
            cpu_count=len(per_cpu) or None,
            load_1=load[0],
            load_5=load[1],
            load_15=load[2],
            mem_total=mem_total,
            mem_available=mem_available,
            swap_total=swap_total,
            swap_used=swap_used,
            iowait_pct=iowait,
            disk_read_bps=disk_read,
            run_queue=run_queue,
            hostname=self._hostname,
            uptime_s=self._wall() - self._boot if self._boot is not None else None,
        )

    def _slow_readings(self) -> tuple[int, int, float | None]:
        """Swap total, swap used and the disks' read rate, read every ``SLOW_HOST_PERIOD_S``
        (the rate over that span); the ticks between repeat the last figures."""
        now = self._clock()
        slow = self._slow
        if slow is None or now - slow[0] >= SLOW_HOST_PERIOD_S:
            total, used = swap(f"{self._proc}/meminfo")
            slow = self._slow = (now, total, used, self._disk_read_rate())
        return slow[1], slow[2], slow[3]

    def _disk_read_rate(self) -> float | None:
        read = disk_read_bytes(f"{self._proc}/diskstats", self._sys_block)
        if read is None:
            return None
        now = self._clock()
        previous = self._last_disk
        self._last_disk = (now, read)
        if previous is None or now <= previous[0]:
            return None
        return max(0.0, (read - previous[1]) / (now - previous[0]))

    def join_processes(
        self, gpu_processes: Iterable[GpuProcess]
    ) -> tuple[tuple[ProcessSample, ...], tuple[Note, ...]]:
        """Host details for each GPU process, and notes on what could not be resolved.

        Inside a container without the host's PID namespace NVML reports PIDs that are
        not ours: such a PID is either absent here or belongs to a process that has no
        NVIDIA device open. Those are marked invisible instead of showing a stranger.
        """
        self._join_at = self._clock()
        samples: list[ProcessSample] = []
        # A process on several GPUs is looked up once a tick: its host details are the same
        # for each, and a second CPU reading a moment after the first would say 0 %.
        looked_up: dict[int, dict[str, Any]] = {}
        for gp in gpu_processes:
            details = looked_up.get(gp.pid)
            if details is None:
                details = looked_up[gp.pid] = self._details(gp.pid)
            samples.append(gp.sample(**details))
        seen = set(looked_up)
        for pid in list(self._procs):
            if pid not in seen:
                self._forget(pid)
        self._cpu.keep_only(seen)
        tree = self._tree[1] if self._tree is not None else {}
        workers = [c for pid in seen for c in tree.get(pid, ())]
        self._workers_meter.keep_only(workers)
        self._stat_files.keep_only([*seen, *workers])
        self._tree_settled = all(tree.get(pid) for pid in self._procs)
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

    def close(self) -> None:
        """Let go of the /proc files kept open between ticks."""
        self._stat_files.close()

    def workers_of(self, pid: int) -> tuple[int, ...]:
        """A GPU process's children (its data-loader workers) as the last pass over the
        process tree found them."""
        return tuple(self._tree[1].get(pid, ())) if self._tree is not None else ()

    def _forget(self, pid: int) -> None:
        self._procs.pop(pid, None)
        self._cuda.pop(pid, None)
        self._identity.pop(pid, None)
        self._numa.pop(pid, None)
        self._numa_memory.pop(pid, None)

    def _details(self, pid: int) -> dict[str, Any]:
        """The host's side of a GPU process, as ProcessSample fields: none where it exited
        since NVML listed it (NVML's facts only), ``visible=False`` where it is not ours."""
        line = self._stat_files.read(pid)
        stat = parse_stat(line)
        if line is None or stat is None:
            if pid in self._procs:  # exited since NVML listed it
                self._forget(pid)
                return {}
            return _NOT_OURS
        known = self._procs.get(pid)
        if known is not None and known != stat.started:
            self._forget(pid)  # the PID was reused: this is another process
            known = None
        if known is None:
            if self._is_foreign(pid, stat.started):
                return _NOT_OURS
            self._procs[pid] = stat.started
            if self._tree is not None and self._tree[0] < self._join_at:
                self._tree_stale = True  # its workers may have started since the pass
            # Read once per process: its mapped libraries and environment are fixed
            # once CUDA is initialised.
            self._cuda[pid] = self._cuda_facts(pid)
        facts = self._cuda.get(pid, CudaFacts())
        workers = self._children(pid)
        return {
            "cpu_percent": self._cpu.percent(pid, stat),
            "rss": stat.rss,
            "threads": stat.threads,
            "children": len(workers) if workers is not None else None,
            "cuda_runtime": facts.runtime,
            "env": facts.env,
            **self._workers_cpu(workers),
            "cuda_libraries": facts.libraries,
            "cuda_runtime_evidence": facts.evidence,
            **self._identity_of(pid, stat.started, line),
            **self._placement(pid, workers),
        }

    def _identity_of(self, pid: int, started: int, line: bytes) -> dict[str, object]:
        """Name, owner, command line, parent and start, every ``IDENTITY_PERIOD_S``;
        ``line``: the stat line the tick read."""
        now = self._clock()
        kept = self._identity.get(pid)
        if kept is not None and now - kept[0] < IDENTITY_PERIOD_S:
            return kept[1]
        fields = after_command(line, 2)
        ppid = int(fields[1]) if len(fields) >= 2 and fields[1].isdigit() else None
        arguments = proc_files.arguments(pid, self._proc)
        identity: dict[str, object] = {
            "name": _name(line, arguments),
            "user": _user(f"{self._proc}/{pid}/status"),
            "command": _command(arguments),
            "ppid": ppid,
            "parent_command": _parent_command(ppid, self._proc),
            "started": None if self._boot is None else self._boot + started / TICKS_PER_S,
        }
        self._identity[pid] = (now, identity)
        return identity

    def _children(self, pid: int) -> list[int] | None:
        """The process's children, from a map of the whole process tree built for all GPU
        processes (see ``TREE_PERIOD_S``); None where /proc cannot be read."""
        now = self._clock()
        if self._tree is None or self._tree_stale or self._tree_due(self._tree, now):
            self._tree = (now, _process_tree())
            self._tree_checked = now
            self._tree_stale = False
        tree = self._tree[1]
        if not tree:
            return None
        return tree.get(pid, [])

    def _tree_due(self, tree: tuple[float, dict[int, list[int]]], now: float) -> bool:
        """Whether the tree must be read again: at the steady period; while some GPU
        process has no workers, at the short one, unless its main thread's children say
        it still has none."""
        made, parents = tree
        if now - made >= TREE_STEADY_S:
            return True
        if self._tree_settled or now - self._tree_checked < TREE_PERIOD_S:
            return False
        self._tree_checked = now
        for pid in self._procs:
            if parents.get(pid):
                continue
            if _has_children(pid) is not False:
                return True  # its workers have started, or the kernel does not say
        return False

    def _placement(self, pid: int, workers: list[int] | None) -> dict[str, object]:
        """Where the process and its workers may run (every ``NUMA_PERIOD_S``) and where
        its memory sits."""
        now = self._clock()
        kept = self._numa.get(pid)
        if kept is not None and now - kept[0] < NUMA_PERIOD_S:
            return kept[1]
        cpus = allowed_cpus(pid)
        placement: dict[str, object] = {"cpus_allowed": cpus}
        if cpus is not None and self._nodes:
            placement["cpu_nodes"] = nodes_of(parse_cpu_list(cpus), self._nodes)
            worker_nodes = []
            for child in (workers or [])[:64]:
                text = allowed_cpus(child)
                if text is not None:
                    found = nodes_of(parse_cpu_list(text), self._nodes)
                    worker_nodes.append(found[0] if len(found) == 1 else -1)
            placement["workers_nodes"] = tuple(worker_nodes)
        placement["numa_memory"] = self._memory_placement(pid, now)
        self._numa[pid] = (now, placement)
        return placement

    def _memory_placement(self, pid: int, now: float) -> tuple[int, ...]:
        """The process's memory per NUMA node, every ``NUMA_MEMORY_PERIOD_S``: the kernel
        walks every page of the process to answer. On a single node there is no question."""
        if len(self._nodes) < 2:
            return ()
        kept = self._numa_memory.get(pid)
        if kept is None or now - kept[0] >= NUMA_MEMORY_PERIOD_S:
            kept = self._numa_memory[pid] = (now, numa_memory(pid))
        return kept[1]

    def _workers_cpu(self, workers: list[int] | None) -> dict[str, float | int | None]:
        """CPU % of a process's children together (its data-loader workers) and how many
        of them work (``WORKER_ACTIVE_PCT`` of a core or more); None until one of them has
        been read twice."""
        if not workers:
            none = None if workers is None else 0
            return {"workers_cpu_percent": none, "workers_active": none}
        total, active, known = 0.0, 0, False
        for child in workers:
            times = parse_cpu(self._stat_files.read(child))
            if times is None:
                self._tree_stale = True  # it exited: its pool is likely being replaced
                continue
            percent = self._workers_meter.share(child, *times)
            if percent is not None:
                total += percent
                active += percent >= WORKER_ACTIVE_PCT
                known = True
        if not known:
            return {"workers_cpu_percent": None, "workers_active": None}
        return {"workers_cpu_percent": total, "workers_active": active}

    def _is_foreign(self, pid: int, started: int) -> bool:
        key = (pid, started)
        verdict = self._foreign.get(key)
        if verdict is None:
            uses = self._device_check(pid)
            verdict = uses is False
            if len(self._foreign) > 4096:
                self._foreign.clear()
            self._foreign[key] = verdict
        return verdict


#: the length the kernel cuts a process's name to (TASK_COMM_LEN, less its NUL)
COMM_CHARS: Final = 15


def _name(stat_line: bytes, arguments: list[str] | None) -> str:
    """A process's name as psutil gives it: the kernel's (from its stat line), or the
    program's file name where the kernel cut it short and the program's name begins
    with it."""
    comm = stat_line[stat_line.find(b"(") + 1 : stat_line.rfind(b")")]
    name = os.fsdecode(comm)
    if len(name) >= COMM_CHARS and arguments:
        program = os.path.basename(arguments[0])
        if program.startswith(name):
            return program
    return name


def _user(status: str) -> str | None:
    """The owner of a process (its real user ID's name, or the number where the system
    has no name for it), from its /proc/PID/status; None where that cannot be read."""
    text = read_small(status)
    value = proc_files.line_value(text.decode("ascii", "replace"), "Uid:") if text else None
    fields = value.split(None, 1) if value is not None else ()
    if not fields or not fields[0].isdigit():
        return None
    uid = int(fields[0])
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _command(parts: list[str] | None) -> str | None:
    if parts is None:
        return None
    # Arguments are bytes to the kernel; undecodable ones come as surrogates (as psutil),
    # which could not be printed or written as UTF-8.
    command = proc_files.command_line(parts).encode("utf-8", "backslashreplace").decode("utf-8")
    if len(command) > MAX_COMMAND_CHARS:
        command = command[:MAX_COMMAND_CHARS] + "…"
    return command or None


def _parent_command(ppid: int | None, proc: str = "/proc") -> str | None:
    """The launcher's command line (torchrun, mpirun, a shell); None for init or unknown."""
    if ppid is None or ppid <= 1:
        return None
    return _command(proc_files.arguments(ppid, proc))


def _process_tree(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    """Parent PID -> child PIDs for every process, from one pass over /proc/*/stat; empty
    where /proc cannot be listed."""
    tree: dict[int, list[int]] = {}
    root = str(proc)
    try:
        names = os.listdir(root)
    except OSError:
        return tree
    for name in names:
        if not name.isdigit():
            continue
        stat = read_small(f"{root}/{name}/stat")
        if stat is None:
            continue  # exited meanwhile
        fields = after_command(stat, 2)  # the state, the parent, the rest
        if len(fields) >= 2 and fields[1].isdigit():
            tree.setdefault(int(fields[1]), []).append(int(name))
    return tree


def _has_children(pid: int, proc: str = "/proc") -> bool | None:
    """Whether a process's main thread has children (a process's data-loader workers are
    its main thread's); None where the kernel does not list them (built without
    CONFIG_PROC_CHILDREN) or the process is gone."""
    text = read_small(f"{proc}/{pid}/task/{pid}/children")
    return None if text is None else bool(text.strip())
