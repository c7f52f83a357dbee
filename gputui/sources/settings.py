"""The settings reader: the configuration of each job on the GPUs (its cgroup, /dev/shm,
limits, swap) every few seconds, and the host's settings less often; ``Frame.jobs`` and
``Frame.settings``. A job is the GPU processes that share a cgroup and a mount namespace.

For ``gputui doctor`` it also reads gputui's own job (``own``): started from a job script
before training, doctor checks the container and environment the job will run in.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import field, replace
from pathlib import Path

from gputui.core.model import DeviceWaiter, HostSettings, JobSettings, ProcessSample
from gputui.core.names import ConfigArea
from gputui.core.records import record
from gputui.sources.cgroups import CgroupReading, read_cgroup
from gputui.sources.cuda_facts import CUDA_ENV_VARS
from gputui.sources.host_settings import (
    device_waiters,
    governors,
    huge_pages,
    infiniband_ports,
    numa_balancing,
    process_limits,
)
from gputui.sources.placement import allowed_cpus
from gputui.sources.proc_stat import read_small
from gputui.sources.shm import read_shm

JOB_PERIOD_S = 10.0  # a job's cgroup, shared memory and limits, re-read this often
HOST_PERIOD_S = 30.0  # the host's settings (and who holds an exclusive GPU)
WINDOW_S = 30.0  # the throttling counters are reported over this span
MAX_JOBS = 64
MAX_WORKERS = 256  # workers of one job whose limits and threads are read
#: what sets gputui's own job apart in the reader's memory from a GPU job of its cgroup
OWN_JOB = "\0gputui"


@record
class _Job:
    at: float  # when it was read
    settings: JobSettings
    #: (when, periods, throttled, CPU seconds) of each reading within the window
    counters: deque[tuple[float, int | None, int | None, float | None]] = field(
        default_factory=deque
    )


class SettingsReader:
    """Reads what bounds the jobs on the GPUs and the host; cheap between its periods."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        own: bool = False,
        own_workers: int | None = None,
        proc: Path = Path("/proc"),
        sys: Path = Path("/sys"),
    ) -> None:
        self._clock = clock
        self._own = own
        self._own_workers = own_workers
        self._proc = proc
        self._sys = sys
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._host: tuple[float, HostSettings] | None = None
        #: when the jobs were last read, of which GPU processes, and what they were
        self._last: tuple[float, frozenset[int], tuple[JobSettings, ...]] | None = None

    def read(
        self,
        processes: Sequence[ProcessSample],
        workers_of: Callable[[int], Sequence[int]],
        exclusive_minors: Collection[int] = (),
    ) -> tuple[tuple[JobSettings, ...], HostSettings]:
        """The jobs of the visible GPU ``processes`` (and gputui's own, for doctor), and the
        host's settings; ``exclusive_minors``: the device numbers of GPUs in
        EXCLUSIVE_PROCESS mode, whose waiting processes are looked for."""
        now = self._clock()
        # who may hold a GPU's device file without being a waiter: NVML's, their workers, us
        skip = {p.pid for p in processes} | {os.getpid()}
        skip |= {w for p in processes for w in workers_of(p.pid)}
        host = self._host_settings(now, exclusive_minors, skip)
        visible = frozenset(p.pid for p in processes if p.visible)
        kept = self._last
        if kept is not None and kept[1] == visible and now - kept[0] < JOB_PERIOD_S:
            return kept[2], host  # the same processes, read a moment ago
        groups: dict[tuple[str, str], list[int]] = {}
        seen: set[int] = set()
        for proc in processes:
            if proc.visible and proc.pid not in seen:
                seen.add(proc.pid)  # a process on several GPUs is one member
                key = self._key(proc.pid)
                if key is not None and (key in groups or len(groups) < MAX_JOBS):
                    groups.setdefault(key, []).append(proc.pid)
        jobs = [
            self._job(key, tuple(sorted(pids)), workers_of, now) for key, pids in groups.items()
        ]
        used = set(groups)
        if self._own:
            # gputui's own job, whether or not a job on the GPUs shares its cgroup: its
            # environment and --workers are the job a script is about to start (kept
            # apart from that job's, whose environment and workers are its own)
            cgroup, namespace = self._key("self") or ("self", "")
            key = (cgroup, namespace + OWN_JOB)
            used.add(key)
            jobs.append(self._job(key, (), workers_of, now, own=True))
        for key in [k for k in self._jobs if k not in used]:
            del self._jobs[key]
        self._last = (now, visible, tuple(jobs))
        return tuple(jobs), host

    def _key(self, pid: int | str) -> tuple[str, str] | None:
        """What makes two processes one job: their cgroups and mount namespace; None for a
        process gone meanwhile."""
        text = read_small(f"{self._proc}/{pid}/cgroup")
        if text is None:
            return None
        try:
            namespace = os.readlink(f"{self._proc}/{pid}/ns/mnt")
        except OSError:
            namespace = ""
        return text.decode("ascii", "replace"), namespace

    def _job(
        self,
        key: tuple[str, str],
        pids: tuple[int, ...],
        workers_of: Callable[[int], Sequence[int]],
        now: float,
        own: bool = False,
    ) -> JobSettings:
        job = self._jobs.get(key)
        if job is not None and now - job.at < JOB_PERIOD_S:
            return job.settings if job.settings.pids == pids else _with_pids(job.settings, pids)
        if job is None:
            job = self._jobs[key] = _Job(now, JobSettings())
        job.at = now
        workers = [w for p in pids for w in workers_of(p)][:MAX_WORKERS]
        first: int | str = pids[0] if pids else "self"
        cgroup = read_cgroup(first, self._proc)
        shm = read_shm(first, self._proc)
        members = [*pids, *workers] if pids else [os.getpid()]
        limits = process_limits(members, self._proc)
        unreadable = [*cgroup.unreadable, *limits.unreadable]
        if shm.unreadable is not None:
            unreadable.append(f"{ConfigArea.SHM}: {shm.unreadable}")
        if limits.swapped is None:
            unreadable.append(f"{ConfigArea.SWAP}: no VmSwap in /proc/PID/status")
        window = _window(job, now, cgroup)
        job.settings = JobSettings(
            pids=pids,
            own=own,
            cgroup=cgroup.path,
            cgroup_version=cgroup.version,
            cpu_quota_us=cgroup.cpu_quota_us,
            cpu_period_us=cgroup.cpu_period_us,
            cpu_periods=cgroup.cpu_periods,
            cpu_throttled_periods=cgroup.cpu_throttled_periods,
            cpu_throttled_s=cgroup.cpu_throttled_s,
            window_s=window[0],
            window_periods=window[1],
            window_throttled=window[2],
            window_cpu_s=window[3],
            memory_limit=cgroup.memory_limit,
            memory_used=cgroup.memory_used,
            memory_anon=cgroup.memory_anon,
            memory_oom_kills=cgroup.memory_oom_kills,
            cpuset=cgroup.cpuset,
            shm_size=shm.size,
            shm_used=shm.used,
            shm_mount=shm.mount,
            workers=(self._own_workers if own else len(workers) if pids else None),
            threads=limits.threads if pids else None,
            nofile_limit=limits.nofile,
            open_files=limits.open_files,
            swapped=limits.swapped,
            env=_own_env() if own else (),
            cpus_allowed=allowed_cpus(os.getpid(), self._proc) if own else None,
            unreadable=tuple(unreadable),
        )
        return job.settings

    def _host_settings(
        self, now: float, minors: Collection[int], skip: Collection[int]
    ) -> HostSettings:
        kept = self._host
        if kept is not None and now - kept[0] < HOST_PERIOD_S:
            return kept[1]
        gov = governors(self._sys)
        thp_enabled, thp_defrag = huge_pages(self._sys)
        balancing, nodes, migrated = numa_balancing(self._proc, self._sys)
        ports = infiniband_ports(self._sys)
        unreadable = []
        if ports is None:
            unreadable.append(f"{ConfigArea.INFINIBAND}: /sys/class/infiniband not readable")
        waiters: tuple[DeviceWaiter, ...] = ()
        if minors:
            waiters, why = device_waiters(minors, skip, self._proc)
            if why is not None:
                unreadable.append(f"{ConfigArea.DEVICES}: {why}")
        settings = HostSettings(
            governor=gov.governor,
            governor_cpus=gov.count,
            cpufreq_cpus=gov.cpus,
            cpufreq_driver=gov.driver,
            energy_preference=gov.preference,
            cpu_mhz=gov.mhz,
            cpu_max_mhz=gov.max_mhz,
            thp_enabled=thp_enabled,
            thp_defrag=thp_defrag,
            numa_balancing=balancing,
            numa_nodes=nodes,
            numa_pages_migrated=migrated,
            ib_ports=ports,
            waiters=waiters,
            unreadable=tuple(unreadable),
        )
        self._host = (now, settings)
        return settings


def _with_pids(settings: JobSettings, pids: tuple[int, ...]) -> JobSettings:
    return replace(settings, pids=pids)


def _window(
    job: _Job, now: float, cgroup: CgroupReading
) -> tuple[float | None, int | None, int | None, float | None]:
    """The throttling counters over the readings of the last ``WINDOW_S``: (span, periods,
    throttled periods, CPU seconds); Nones after one reading."""
    ring = job.counters
    reading = (now, cgroup.cpu_periods, cgroup.cpu_throttled_periods, cgroup.cpu_usage_s)
    if ring and reading[1] is not None and (ring[-1][1] or 0) > reading[1]:
        ring.clear()  # the counters went back: another cgroup under the same name
    ring.append(reading)
    while len(ring) > 2 and now - ring[1][0] >= WINDOW_S:
        ring.popleft()
    if len(ring) < 2:
        return None, None, None, None
    first = ring[0]
    span = now - first[0]
    periods = _delta(reading[1], first[1])
    throttled = _delta(reading[2], first[2])
    cpu = reading[3] - first[3] if reading[3] is not None and first[3] is not None else None
    return (span if span > 0 else None), periods, throttled, cpu


def _delta(now: int | None, then: int | None) -> int | None:
    return now - then if now is not None and then is not None and now >= then else None


def _own_env() -> tuple[str, ...]:
    """The variables gputui reads, from its own environment (a job script's, for doctor)."""
    return tuple(sorted(f"{k}={v}" for k, v in os.environ.items() if k in CUDA_ENV_VARS))
