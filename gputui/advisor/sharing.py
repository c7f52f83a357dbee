"""Several jobs on one GPU: without MPS or MIG they time-slice it, and each gets a share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gputui.advisor.context import Context
from gputui.advisor.finding import Candidate
from gputui.advisor.pipeline import job_of
from gputui.advisor.rule import Rule
from gputui.core.model import ProcessSample
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_bytes


def _active(proc: ProcessSample, t_pct: float) -> bool:
    """Whether the process does GPU work: its SM share where the driver gives one, else a
    busy host process (a job that computes drives the GPU from a busy CPU)."""
    if proc.sm_util is not None:
        return proc.sm_util >= t_pct
    return proc.cpu_percent is not None and proc.cpu_percent >= 50.0


def _jobs(procs: Sequence[ProcessSample]) -> list[list[ProcessSample]]:
    """The processes grouped by job: a launcher job's ranks (its environment), a process
    and its parent, else each process alone."""
    groups: list[list[ProcessSample]] = []
    keys: list[object] = []
    pids = {p.pid for p in procs}
    for proc in procs:
        key: object = job_of(proc)
        if key is None:
            parent = proc.ppid if proc.ppid in pids else None
            key = ("pid", parent if parent is not None else proc.pid)
        if key in keys:
            groups[keys.index(key)].append(proc)
        else:
            keys.append(key)
            groups.append([proc])
    return groups


def gpu_shared(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for sample, device in ctx.samples():
        if device.mig_mode:
            continue  # MIG instances are isolated slices, not time-sliced
        procs = [p for p in ctx.processes(sample.index) if p.visible and "compute" in p.kind]
        if len(procs) < 2 or any("mps" in p.kind for p in ctx.processes(sample.index)):
            continue  # MPS runs clients side by side: sharing on purpose
        working = [job for job in _jobs(procs) if any(_active(p, t.shared_sm_pct) for p in job)]
        if len(working) < 2:
            continue
        users = {p.user for job in working for p in job if p.user}
        lines = [
            f"{len(working)} jobs time-slice this GPU"
            + (f", of {len(users)} users" if len(users) > 1 else "")
            + ": without MPS or MIG each runs only in its turns, plus the context switches"
        ]
        for job in working[:4]:
            proc = max(job, key=lambda p: p.gpu_memory or 0)
            sm = f", SM {proc.sm_util:.0f} %" if proc.sm_util is not None else ""
            lines.append(
                f"pid {proc.pid} {proc.user or '?'} {proc.name or ''}: "
                f"{fmt_bytes(proc.gpu_memory)} of GPU memory{sm}"
            )
        yield Candidate(
            rule=RuleId.GPU_SHARED,
            severity=Severity.WARNING,
            gpu=sample.index,
            title="Several jobs share this GPU: each gets a fraction of it",
            evidence=tuple(lines),
            remedies=(
                "Give each job its own GPU (the scheduler's GPU allocation, "
                "CUDA_VISIBLE_DEVICES); two users on one GPU is usually an allocation mistake",
                "If sharing is intended: MPS (nvidia-cuda-mps-control -d) runs them side by "
                "side, MIG partitions isolate them",
            ),
        )


RULES = (
    Rule(
        RuleId.GPU_SHARED,
        "5 software / scheduling",
        "the GPU's compute processes: user, SM share (nvmlDeviceGetProcessUtilization) or host "
        "CPU, the launcher job each belongs to",
        "two or more jobs (processes of different users, or unrelated jobs of one user: not "
        "ranks of one launcher job, not parent and child) each doing work (SM >= "
        "{t.shared_sm_pct:g} %, or CPU >= 50 % where the driver gives no SM share) on one GPU, "
        "outside MIG and MPS",
        "one GPU per job; MPS or MIG when sharing is meant",
        gpu_shared,
        never_claims="sharing from a process that only holds memory; MIG instances or MPS "
        "clients (they do not time-slice)",
    ),
)
