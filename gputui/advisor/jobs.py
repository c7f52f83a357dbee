"""The jobs the configuration rules judge: each job's GPUs and name, the environments to
read (every GPU process's, and gputui's own for doctor), the GPUs a job spans."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import field
from typing import cast

from gputui.advisor.context import Context
from gputui.advisor.pipeline import job_of
from gputui.core.model import JobSettings, ProcessSample
from gputui.core.names import RuleId
from gputui.core.records import frozen
from gputui.core.units import fmt_bytes


@frozen
class EnvHolder:
    """An environment the rules read: a GPU process's, or gputui's own job's."""

    who: str  # "pid 4242 (python)", "gputui's own environment (the job to come)"
    env: dict[str, str]
    gpus: tuple[int | None, ...]  # where a finding on it goes; (None,): the host
    process: ProcessSample | None = None
    job: JobSettings | None = None
    #: the GPUs it shares work with: its job's, or its own visible ones
    peers: tuple[int, ...] = field(default=())


def who(process: ProcessSample) -> str:
    return f"pid {process.pid}" + (f" ({process.name})" if process.name else "")


def env_dict(env: Sequence[str]) -> dict[str, str]:
    return dict(e.split("=", 1) for e in env if "=" in e)


def set_to(env: dict[str, str], name: str) -> str | None:
    """The variable's value where it is set to something other than off ("", "0")."""
    value = env.get(name)
    return value if value is not None and value.strip() not in ("", "0") else None


def processes_of(ctx: Context) -> list[ProcessSample]:
    """Each visible GPU process once (a process on several GPUs is one)."""
    found = ctx.shared.get("unique processes")
    if found is None:
        seen: dict[int, ProcessSample] = {}
        for proc in ctx.frame.processes:
            if proc.visible:
                seen.setdefault(proc.pid, proc)
        found = ctx.shared["unique processes"] = list(seen.values())
    return cast("list[ProcessSample]", found)


def gpus_of(ctx: Context, pids: Sequence[int]) -> tuple[int, ...]:
    wanted = set(pids)
    return tuple(sorted({p.gpu_index for p in ctx.frame.processes if p.pid in wanted}))


def places(ctx: Context, job: JobSettings) -> tuple[int | None, ...]:
    """Where a finding on ``job`` goes: its GPUs, or the host for gputui's own job."""
    gpus = gpus_of(ctx, job.pids)
    return gpus if gpus and not job.own else (None,)


def job_name(job: JobSettings) -> str:
    cgroup = f"cgroup v{job.cgroup_version} {job.cgroup}" if job.cgroup else "cgroup unknown"
    if job.own:
        return f"gputui's own job (the one a job script starts it in; {cgroup})"
    pids = ", ".join(str(p) for p in job.pids[:4]) + (", ..." if len(job.pids) > 4 else "")
    return f"the job of pid {pids} ({cgroup})"


def judged_jobs(
    ctx: Context, rule: RuleId, area: str
) -> Iterator[tuple[JobSettings, tuple[int | None, ...]]]:
    """Each job whose ``area`` could be read, with its places; the others are said to be
    not judged, with why."""
    for job in ctx.frame.jobs:
        where = places(ctx, job)
        why = job.unread(area)
        if why is not None:
            for gpu in where:
                ctx.cannot_judge(rule, gpu, f"{job_name(job)}: {why}")
            continue
        yield job, where


def job_processes(ctx: Context, job: JobSettings) -> list[ProcessSample]:
    pids = set(job.pids)
    return [p for p in processes_of(ctx) if p.pid in pids]


def job_of_pid(ctx: Context, pid: int) -> JobSettings | None:
    return next((j for j in ctx.frame.jobs if pid in j.pids), None)


def cpu_count(text: str | None) -> int | None:
    """How many CPUs a Linux CPU list names ("0-3,8" -> 5); None for none or nonsense."""
    if not text:
        return None
    total = 0
    for part in text.strip().split(","):
        first, _, last = part.strip().partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            return None
        total += (int(last) - int(first) + 1) if last else 1
    return total if total > 0 else None


def visible_gpus(ctx: Context, env: dict[str, str]) -> tuple[int, ...]:
    """The GPUs CUDA_VISIBLE_DEVICES names (indices or UUIDs), in its order; every GPU
    where it is unset."""
    text = env.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return tuple(sorted(ctx.devices))
    by_uuid = {d.uuid: i for i, d in ctx.devices.items() if d.uuid}
    out: list[int] = []
    for item in text.split(","):
        item = item.strip()
        index = int(item) if item.isdigit() else by_uuid.get(item)
        if index is None or index not in ctx.devices:
            break  # CUDA stops at the first entry it cannot use
        out.append(index)
    return tuple(out)


def env_holders(ctx: Context) -> list[EnvHolder]:
    """Every environment to read: each visible GPU process's (its peers: the GPUs of the
    ranks of its launcher job, or its own), and gputui's own job's (the job to come)."""
    found = ctx.shared.get("env holders")
    if found is not None:
        return cast("list[EnvHolder]", found)
    procs = processes_of(ctx)
    by_job: dict[tuple[str, ...], set[int]] = {}
    for proc in procs:
        key = job_of(proc)
        if key is not None:
            by_job.setdefault(key, set()).update(gpus_of(ctx, (proc.pid,)))
    holders = []
    for proc in procs:
        own_gpus = gpus_of(ctx, (proc.pid,))
        key = job_of(proc)
        peers = tuple(sorted(by_job[key])) if key is not None else own_gpus
        holders.append(
            EnvHolder(
                who(proc), env_dict(proc.env), own_gpus, proc, job_of_pid(ctx, proc.pid), peers
            )
        )
    for job in ctx.frame.jobs:
        if job.own:
            env = env_dict(job.env)
            holders.append(
                EnvHolder(
                    "gputui's own environment (a job started from here inherits it)",
                    env,
                    (None,),
                    None,
                    job,
                    visible_gpus(ctx, env),
                )
            )
    ctx.shared["env holders"] = holders
    return holders


def size(value: int | None) -> str:
    return fmt_bytes(value) if value is not None else "?"
