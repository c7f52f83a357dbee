"""The configuration section of `gputui doctor` (and all of `gputui doctor --config`):
what was read of the node's, the GPUs' and each job's settings, and every check's state.

Outside text (cgroup paths, environment values, process names) arrives cleaned by the
model and is never read as Rich markup here; environment values are masked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from gputui.advisor.config_check import NOT_READ, OK, CheckState
from gputui.advisor.jobs import job_name
from gputui.core.judgement import gpu_list
from gputui.core.model import DeviceInfo, Frame, HostSettings, JobSettings
from gputui.core.sanitize import mask_secrets
from gputui.core.units import fmt_bytes

_STYLE = {
    OK: "green",
    "info": "cyan",
    "warning": "yellow",
    "critical": "bold red",
    "not judged": "yellow",
    "not applicable": "dim",
    "watching": "dim",
    NOT_READ: "dim",
}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _limit(value: int | None) -> str:
    return "none" if value is not None and value < 0 else fmt_bytes(value)


def host_line(settings: HostSettings) -> str:
    parts = []
    if settings.governor is not None:
        clock = (
            f", mean {settings.cpu_mhz:.0f} of {settings.cpu_max_mhz:.0f} MHz"
            if settings.cpu_mhz is not None and settings.cpu_max_mhz
            else ""
        )
        parts.append(
            f"CPU governor {settings.governor} on {settings.governor_cpus} of "
            f"{settings.cpufreq_cpus} CPUs ({settings.cpufreq_driver or '?'}{clock})"
        )
    else:
        parts.append("CPU governor: no frequency driver")
    if settings.thp_enabled is not None:
        parts.append(f"huge pages {settings.thp_enabled}, defrag {settings.thp_defrag or '?'}")
    if settings.numa_balancing is not None:
        parts.append(
            f"NUMA balancing {'on' if settings.numa_balancing else 'off'}"
            + (f", {_count(settings.numa_nodes, 'NUMA node')}" if settings.numa_nodes else "")
        )
    if settings.ib_ports is not None:
        parts.append("InfiniBand/RoCE: " + (", ".join(settings.ib_ports[:4]) or "none active"))
    if settings.waiters:
        parts.append(f"{len(settings.waiters)} process(es) waiting for an exclusive GPU")
    parts += [f"not readable: {u}" for u in settings.unreadable]
    return "host: " + "; ".join(parts)


def job_line(job: JobSettings) -> str:
    parts = []
    if job.cpu_quota_us is not None:
        quota = (
            f"{job.cpu_quota_us / job.cpu_period_us:.2g} cores"
            if job.cpu_quota_us > 0 and job.cpu_period_us
            else "none"
        )
        throttled = ""
        if job.cpu_periods:
            throttled = (
                f", throttled in {job.cpu_throttled_periods or 0} of {job.cpu_periods} periods"
            )
        parts.append(f"CPU quota {quota}{throttled}")
    if job.memory_limit is not None:
        anon = f", {fmt_bytes(job.memory_anon)} anonymous" if job.memory_anon is not None else ""
        kills = f", {job.memory_oom_kills} OOM kills" if job.memory_oom_kills else ""
        parts.append(f"memory limit {_limit(job.memory_limit)}{anon}{kills}")
    if job.cpuset:
        parts.append(f"cpuset {job.cpuset}")
    if job.shm_size is not None:
        used = f", {fmt_bytes(job.shm_used)} used" if job.shm_used is not None else ""
        mount = f" ({job.shm_mount})" if job.shm_mount else ""
        parts.append(f"/dev/shm {fmt_bytes(job.shm_size)}{mount}{used}")
    if job.nofile_limit is not None:
        count = f"{job.open_files} of " if job.open_files is not None else ""
        parts.append(f"open files {count}{job.nofile_limit}")
    if job.swapped is not None:
        parts.append(f"swap {fmt_bytes(job.swapped)}")
    if job.workers is not None:
        threads = f", {job.threads} threads" if job.threads is not None else ""
        parts.append(f"{job.workers} data-loader workers{threads}")
    parts += [f"not readable: {u}" for u in job.unreadable]
    return f"{job_name(job)}: " + "; ".join(parts)


def gpu_line(device: DeviceInfo) -> str:
    parts = [f"compute mode {device.compute_mode or '?'}"]
    for name, now, pending in (
        ("ECC", device.ecc_enabled, device.ecc_pending),
        ("MIG", device.mig_mode, device.mig_pending),
    ):
        if now is not None:
            change = f" ({'on' if pending else 'off'} after a reset)" if pending != now else ""
            parts.append(f"{name} {'on' if now else 'off'}{change}")
    if device.p0_max_graphics_mhz is not None:
        parts.append(
            f"P0 graphics clock up to {device.p0_max_graphics_mhz} of "
            f"{device.max_graphics_clock_mhz or '?'} MHz"
        )
    if device.p2p_read is not None:
        by_status: dict[str, list[int]] = {}
        for j, status in enumerate(device.p2p_read):
            if status not in ("X", ""):
                by_status.setdefault(status, []).append(j)
        if by_status:
            parts.append(
                "peer-to-peer reads "
                + ", ".join(f"{s} to {gpu_list(g)}" for s, g in sorted(by_status.items()))
            )
    return f"GPU {device.index}: " + "; ".join(parts)


def settings_lines(devices: Sequence[DeviceInfo], frame: Frame | None) -> list[str]:
    """What was read, one line each: the host, every job, every environment, every GPU."""
    if frame is None:
        return []
    lines = []
    if frame.settings is not None:
        lines.append(host_line(frame.settings))
    lines += [job_line(job) for job in frame.jobs]
    seen: set[int] = set()
    for proc in frame.processes:
        if proc.env and proc.pid not in seen:
            seen.add(proc.pid)
            lines.append(
                f"environment of pid {proc.pid}: " + ", ".join(map(mask_secrets, proc.env))
            )
    for job in frame.jobs:
        if job.own:
            env = ", ".join(map(mask_secrets, job.env)) or "none of the variables gputui reads"
            lines.append(f"gputui's own environment: {env}")
    if frame.settings is not None:
        lines += [gpu_line(d) for d in devices]
    return lines


def check_lines(checks: Sequence[CheckState]) -> list[Text]:
    """One line a check: its state, rule, what it looks at; where and what it found."""
    width = max((len(c.state) for c in checks), default=2)
    named = max((len(c.rule) for c in checks if c.checked), default=0)
    out = []
    for check in checks:
        line = Text.assemble((f"{check.state:<{width}}", _STYLE.get(check.state, "")), "  ")
        line.append(str(check.rule), style="bold")
        if check.checked:
            line.append(f"{'':<{named - len(check.rule)}}  {check.checked}", style="dim")
        if check.where:
            line.append(f" ({check.where})")
        if check.text:
            line.append(f": {check.text}")  # outside text: never markup
        out.append(line)
    return out


def config_document(
    devices: Sequence[DeviceInfo], frame: Frame | None, checks: Sequence[CheckState]
) -> dict[str, Any]:
    """The configuration section as JSON values: what was read, each check's state."""
    return {"read": settings_lines(devices, frame), "checks": [c.to_dict() for c in checks]}
