"""Configuration: what the job's container or cgroup gives it. A CPU quota the kernel
throttles every period, a memory limit its workers die at, a cpuset with fewer CPUs than
workers, a /dev/shm too small for its data loaders, an open-files limit, memory in swap.
The GPU only waits: nothing on the GPU side shows why."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import (
    cpu_count,
    job_name,
    job_processes,
    judged_jobs,
    places,
    size,
)
from gputui.advisor.rule import Rule
from gputui.core.model import JobSettings
from gputui.core.names import ConfigArea, Metric, RuleId, Severity
from gputui.core.units import fmt_duration

CAUSE = "3 configuration"


def _each(
    where: tuple[int | None, ...],
    rule: RuleId,
    severity: Severity,
    title: str,
    *args: tuple[str, ...],
) -> Iterator[Candidate]:
    evidence, remedies = args
    for gpu in where:
        yield Candidate(rule, severity, gpu, title, evidence, remedies)


def _demand(ctx: Context, job: JobSettings) -> tuple[float | None, str | None]:
    """The CPU the job's processes and busy workers want (cores), and the line saying it."""
    procs = job_processes(ctx, job)
    if job.own or not procs:
        return None, None
    cores = sum((p.cpu_percent or 0.0) + (p.workers_cpu_percent or 0.0) for p in procs) / 100
    busy = sum(p.workers_active or 0 for p in procs)
    if not any(p.cpu_percent is not None for p in procs):
        return None, None
    return cores, (
        f"its {len(procs)} GPU process(es) and {busy} busy data-loader worker(s) use "
        f"{cores:.1f} cores"
    )


def _gpu_waits(ctx: Context, where: tuple[int | None, ...]) -> list[str]:
    lines = []
    for gpu in where:
        util = ctx.stats(gpu, Metric.UTIL_GPU) if gpu is not None else None
        if util is not None and util.mean < ctx.t.starved_fed_pct:
            lines.append(f"GPU {gpu} busy {util.mean:.0f} % meanwhile: it waits for the CPU side")
    return lines


# -- cpu-throttled ------------------------------------------------------------------------
def _throttling(ctx: Context, job: JobSettings) -> tuple[float, int, str] | None:
    """The share of CFS periods throttled, over how many, and over what span: the window's
    readings, else since the cgroup started (a one-off check)."""
    least = ctx.t.cpu_throttled_min_periods
    periods, throttled = job.window_periods, job.window_throttled
    if periods is not None and throttled is not None and job.window_s:
        # a window read: what the cgroup did lately, never its past (too few periods in
        # it means the job barely wanted CPU meanwhile)
        if periods < least:
            return None
        return throttled / periods, periods, f"the last {fmt_duration(job.window_s)}"
    periods, throttled = job.cpu_periods, job.cpu_throttled_periods
    if periods is not None and throttled is not None and periods >= least:
        return throttled / periods, periods, "the cgroup's life so far"
    return None


def cpu_throttled(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job, where in judged_jobs(ctx, RuleId.CPU_THROTTLED, ConfigArea.CPU):
        quota, period = job.cpu_quota_us, job.cpu_period_us
        if quota is None or quota <= 0 or not period:
            continue  # no quota: nothing to throttle
        cores = quota / period
        setting = (
            f"cpu.max {quota} {period}" if job.cgroup_version == 2 else f"cpu.cfs_quota_us {quota}"
        )
        lines = [f"{job_name(job)}: CPU quota {cores:.2g} cores ({setting})"]
        throttled = _throttling(ctx, job)
        demand, demand_line = _demand(ctx, job)
        workers = job.workers or 0
        if throttled is None or throttled[0] < t.cpu_throttled_share:
            if throttled is None and workers + len(job.pids) > cores and workers:
                lines.append(
                    f"{workers} data-loader workers and {len(job.pids) or 1} process(es) "
                    f"share {cores:.2g} cores: they will be throttled once they all work"
                )
                yield from _each(
                    where,
                    RuleId.CPU_THROTTLED,
                    Severity.INFO,
                    "CPU quota smaller than the job's workers",
                    tuple(lines),
                    _QUOTA_REMEDIES,
                )
            continue
        share, periods, span = throttled
        lines.append(
            f"throttled in {100 * share:.0f} % of {periods} scheduler periods over {span}"
            + (f" ({job.cpu_throttled_s:.0f} s held back in all)" if job.cpu_throttled_s else "")
        )
        if job.window_cpu_s is not None and job.window_s:
            lines.append(
                f"the cgroup used {job.window_cpu_s / job.window_s:.2f} cores of {cores:.2g}"
            )
        if demand_line is not None and demand is not None:
            lines.append(demand_line)
        lines += _gpu_waits(ctx, where)
        yield from _each(
            where,
            RuleId.CPU_THROTTLED,
            Severity.WARNING,
            "CPU quota throttled: the kernel stops the job's CPUs every period",
            tuple(lines),
            _QUOTA_REMEDIES,
        )


_QUOTA_REMEDIES = (
    "Give the job more CPU: docker run --cpus=N, Kubernetes resources.limits.cpu (or no CPU "
    "limit, keeping the request), Slurm --cpus-per-task, systemd CPUQuota=",
    "Or fit the work to the quota: DataLoader num_workers about the quota's cores per GPU "
    "process minus one; cheaper batches (pre-decoded data, GPU-side augmentation)",
)


# -- cgroup-memory ------------------------------------------------------------------------
def cgroup_memory(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job, where in judged_jobs(ctx, RuleId.CGROUP_MEMORY, ConfigArea.MEMORY):
        limit = job.memory_limit
        if limit is None or limit <= 0:
            continue
        kills = job.memory_oom_kills or 0
        anon = job.memory_anon
        share = anon / limit if anon is not None else None
        near = share is not None and share >= t.cgroup_memory_share
        if not kills and not near:
            continue
        lines = [
            f"{job_name(job)}: memory limit {size(limit)}"
            + (
                f", {size(anon)} of it anonymous and shared memory ({100 * share:.0f} %)"
                if share is not None
                else ""
            )
            + (f", {size(job.memory_used)} with page cache" if job.memory_used else "")
        ]
        if kills:
            lines.append(
                f"{kills} process(es) of the cgroup killed by the OOM killer at the limit since "
                "it started (a DataLoader worker 'killed by signal: Killed')"
            )
        if job.shm_used:
            lines.append(f"/dev/shm counts against this limit: {size(job.shm_used)} in it")
        severity = Severity.CRITICAL if kills and near else Severity.WARNING
        title = (
            "Memory limit reached: the job's processes are killed at it"
            if kills
            else "Memory limit nearly reached: workers are killed at it"
        )
        yield from _each(
            where,
            RuleId.CGROUP_MEMORY,
            severity,
            title,
            tuple(lines),
            (
                "Raise the job's memory limit: docker run --memory, Kubernetes "
                "resources.limits.memory, Slurm --mem",
                "Or hold less: fewer DataLoader workers or a smaller prefetch_factor (each worker "
                "holds its batches); a dataset as numpy memmap or Arrow rather than Python lists, "
                "which every worker copies as it reads them",
            ),
        )


# -- cpuset-small -------------------------------------------------------------------------
def cpuset_small(ctx: Context) -> Iterator[Candidate]:
    for job, where in judged_jobs(ctx, RuleId.CPUSET_SMALL, ConfigArea.CPUSET):
        text = job.cpuset or job.cpus_allowed
        cpus = cpu_count(text)
        workers = job.workers
        ranks = len(job.pids) or 1
        if cpus is None or not workers or workers + ranks <= cpus:
            continue
        lines = [
            f"{job_name(job)}: cpuset {text}, {cpus} CPUs for {ranks} GPU process(es) and "
            f"{workers} data-loader workers"
        ]
        used = job.window_cpu_s / job.window_s if job.window_cpu_s and job.window_s else None
        demand, demand_line = _demand(ctx, job)
        busy = max(used or 0.0, demand or 0.0)
        if used is not None:
            lines.append(f"the cgroup used {used:.1f} of its {cpus} CPUs")
        if demand_line is not None:
            lines.append(demand_line)
        full = busy >= 0.8 * cpus
        lines += _gpu_waits(ctx, where) if full else []
        severity = Severity.WARNING if full else Severity.INFO
        title = (
            "Fewer CPUs than workers, all in use: the workers queue for cores"
            if full
            else "Fewer CPUs than workers: they share cores once they all work"
        )
        yield from _each(
            where,
            RuleId.CPUSET_SMALL,
            severity,
            title,
            tuple(lines),
            (
                "Give the job more CPUs: docker run --cpuset-cpus, Kubernetes' CPU request with "
                "the static CPU manager, Slurm --cpus-per-task",
                f"Or start fewer workers: num_workers about {max(1, cpus // ranks - 1)} per GPU "
                "process here",
            ),
        )


# -- shm-small ----------------------------------------------------------------------------
def shm_small(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job in ctx.frame.jobs:
        where = places(ctx, job)
        why = job.unread(ConfigArea.SHM)
        if job.shm_size is None:
            for gpu in where:
                ctx.cannot_judge(
                    RuleId.SHM_SMALL, gpu, f"{job_name(job)}: {why or '/dev/shm unknown'}"
                )
            continue
        found = _shm_verdict(ctx, job)
        if found is None:
            if job.shm_used is None and why is not None:  # size fine, its use unread
                for gpu in where:
                    ctx.cannot_judge(RuleId.SHM_SMALL, gpu, f"{job_name(job)}: its use: {why}")
            continue
        severity, title, lines = found
        lines.insert(
            0,
            f"{job_name(job)}: /dev/shm {size(job.shm_size)}"
            + (f" ({job.shm_mount})" if job.shm_mount else "")
            + (f", {size(job.shm_used)} used" if job.shm_used is not None else ""),
        )
        yield from _each(
            where,
            RuleId.SHM_SMALL,
            severity,
            title,
            tuple(lines),
            (
                "Give the container more shared memory: docker run --shm-size=16g (or "
                "--ipc=host); Kubernetes: an emptyDir with medium: Memory mounted at /dev/shm",
                "On a host: mount -o remount,size=16G /dev/shm (root), or /etc/fstab",
                "Until then: fewer workers or a smaller prefetch_factor; "
                f"{size(t.shm_min_bytes)} or more suits most image and video loaders",
            ),
        )


def _shm_verdict(ctx: Context, job: JobSettings) -> tuple[Severity, str, list[str]] | None:
    t = ctx.t
    total, used, workers = job.shm_size or 0, job.shm_used, job.workers
    if used is not None and total > 0 and used / total >= t.shm_used_share:
        return (
            Severity.WARNING,
            "Shared memory (/dev/shm) nearly full",
            [
                f"{100 * used / total:.0f} % used: DataLoader workers fail with 'No space left on "
                "device' or 'Bus error' when it fills",
            ],
        )
    if total >= t.shm_min_bytes:
        return None
    if workers:
        return (
            Severity.WARNING,
            "Shared memory (/dev/shm) too small for the data loaders",
            [
                f"{workers} data-loader workers pass every batch to the training process "
                f"through it: under {size(t.shm_min_bytes)}, large batches fail ('Bus error', "
                "'insufficient shared memory')",
            ],
        )
    if workers is None:
        return (
            Severity.INFO,
            "Shared memory (/dev/shm) small for data-loader workers",
            [
                "a DataLoader with workers passes every batch through it: under "
                f"{size(t.shm_min_bytes)}, large batches fail ('Bus error')",
            ],
        )
    return None


# -- open-files ---------------------------------------------------------------------------
def open_files(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job in ctx.frame.jobs:
        where = places(ctx, job)
        limit, count, why = job.nofile_limit, job.open_files, job.unread(ConfigArea.FILES)
        if limit is None or limit <= 0:
            if why is not None:
                for gpu in where:
                    ctx.cannot_judge(RuleId.OPEN_FILES, gpu, f"{job_name(job)}: {why}")
            continue
        lines = [f"{job_name(job)}: open-files limit {limit} (soft, ulimit -n)"]
        if count is not None and count >= t.open_files_share * limit:
            lines.append(
                f"{count} files open in its most pressed process ({100 * count / limit:.0f} %)"
            )
            severity, title = Severity.WARNING, "Open files near the limit"
        elif limit <= t.open_files_low and job.workers:
            lines.append(
                f"{job.workers} data-loader workers: PyTorch's default sharing strategy keeps a "
                "file descriptor open per tensor in flight ('Too many open files')"
            )
            severity, title = Severity.INFO, "Low open-files limit for data-loader workers"
        else:
            if count is None and why is not None:
                for gpu in where:
                    ctx.cannot_judge(RuleId.OPEN_FILES, gpu, f"{job_name(job)}: {why}")
            continue
        yield from _each(
            where,
            RuleId.OPEN_FILES,
            severity,
            title,
            tuple(lines),
            (
                "Raise it in the job script (up to the hard limit): ulimit -n 65536; docker run "
                "--ulimit nofile=65536:65536; systemd LimitNOFILE=; /etc/security/limits.conf",
                "Or torch.multiprocessing.set_sharing_strategy('file_system') in the training "
                "script",
            ),
        )


# -- job-swapped --------------------------------------------------------------------------
def job_swapped(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job, where in judged_jobs(ctx, RuleId.JOB_SWAPPED, ConfigArea.SWAP):
        if job.swapped is None or job.swapped < t.job_swapped_bytes or job.own:
            continue
        lines = [
            f"{job_name(job)}: {size(job.swapped)} of its processes' and workers' memory in swap"
        ]
        host = ctx.frame.host
        if host is not None and host.swap_used is not None and host.swap_total:
            lines.append(f"host swap {size(host.swap_used)} used of {size(host.swap_total)}")
        lines.append("a page the job touches in swap waits for the disk (major page faults)")
        yield from _each(
            where,
            RuleId.JOB_SWAPPED,
            Severity.WARNING,
            "The job's memory is in swap",
            tuple(lines),
            (
                "Hold less in memory: fewer DataLoader workers, a smaller prefetch_factor, a "
                "dataset read from disk or memory-mapped rather than loaded whole",
                "Keep training memory out of swap: vm.swappiness=1 (sysctl, root), or swapoff -a "
                "once everything fits",
            ),
        )


RULES = (
    Rule(
        RuleId.CPU_THROTTLED,
        CAUSE,
        "the job's cgroup (/proc/PID/cgroup): its CPU quota (v2 cpu.max, v1 "
        "cpu.cfs_quota_us, the tightest from its cgroup up), nr_periods and nr_throttled of "
        "cpu.stat over the window (since the cgroup started for a one-off check), its CPU "
        "use (usage_usec, cpuacct.usage), the job's processes' and workers' CPU",
        "throttled in >= {t.cpu_throttled_share:share} of >= {t.cpu_throttled_min_periods} "
        "periods (warning); info without enough periods when its workers and processes "
        "outnumber the quota's cores",
        "more CPU for the job (--cpus, limits.cpu, --cpus-per-task), or fewer workers",
        cpu_throttled,
        needs_history="",
        never_claims="throttling of a job without a quota, or from fewer periods than "
        "{t.cpu_throttled_min_periods}",
    ),
    Rule(
        RuleId.CGROUP_MEMORY,
        CAUSE,
        "the job's cgroup memory limit (v2 memory.max up the tree, v1 "
        "hierarchical_memory_limit), its anonymous and shared memory (memory.stat), the "
        "OOM kills at the limit (memory.events oom_kill, v1 memory.oom_control)",
        "processes were killed at the limit (critical while still >= "
        "{t.cgroup_memory_share:share} of it), or anonymous and shared memory >= "
        "{t.cgroup_memory_share:share} of the limit (warning)",
        "a higher memory limit, fewer workers, memory-mapped datasets",
        cgroup_memory,
        needs_history="",
        never_claims="pressure from page cache near the limit: the kernel drops it first",
    ),
    Rule(
        RuleId.CPUSET_SMALL,
        CAUSE,
        "the job's cpuset (cpuset.cpus.effective, v1 cpuset.effective_cpus), its GPU "
        "processes and data-loader workers, the cgroup's CPU use",
        "more workers and GPU processes than CPUs: warning when >= 80 % of them are in use, "
        "info otherwise",
        "more CPUs in the cpuset, or fewer workers",
        cpuset_small,
        needs_history="",
    ),
    Rule(
        RuleId.SHM_SMALL,
        CAUSE,
        "/dev/shm in the job's own mount namespace (/proc/PID/mountinfo, statvfs of "
        "/proc/PID/root/dev/shm): its size and use, the job's data-loader workers",
        "used >= {t.shm_used_share:share}, or smaller than {t.shm_min_bytes:gib} with "
        "workers (warning; info for a job whose workers are not known yet)",
        "--shm-size / --ipc=host, a Memory emptyDir at /dev/shm, remount with a size",
        shm_small,
        needs_history="",
    ),
    Rule(
        RuleId.OPEN_FILES,
        CAUSE,
        "the soft open-files limit of the job's processes and workers (/proc/PID/limits) "
        "and the files they have open (/proc/PID/fd)",
        "a process with >= {t.open_files_share:share} of its limit open (warning); a limit of "
        "{t.open_files_low} or less with data-loader workers (info)",
        "ulimit -n, --ulimit nofile, LimitNOFILE, or the file_system sharing strategy",
        open_files,
        needs_history="",
    ),
    Rule(
        RuleId.JOB_SWAPPED,
        CAUSE,
        "VmSwap of the job's processes and workers (/proc/PID/status), host swap",
        "{t.job_swapped_bytes:gib} or more of the job's memory in swap",
        "hold less in memory, vm.swappiness=1",
        job_swapped,
        needs_history="",
        never_claims="anything from swap that other processes use",
    ),
)
