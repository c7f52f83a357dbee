"""Stuck, not slow: a job whose ranks wait in a collective that never completes, and a GPU
busy without work.

A collective (NCCL's all-reduce, a barrier) runs a kernel on every rank that spins until
all ranks have joined: the ranks that arrived read 100 % utilisation at near idle power,
with no memory, SM or link activity, for as long as the one missing rank stays away. That
rank's GPU idles (it is stuck in host code, waits on I/O, took another code path) or its
process is gone. A checkpoint save or an evaluation on one rank looks the same for a
while, so the verdict waits: ``hang_s``, or ``hang_unseen_s`` where the odd rank works on
its CPU or is not on this node.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import field

from gputui.advisor.context import Context, gb, smi_target
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import env_dict
from gputui.advisor.ranks import WORLD, Job, Rank, first_set, jobs_here, names_of
from gputui.advisor.rule import Rule
from gputui.advisor.work import Spin, idle_since, spin
from gputui.core.judgement import Undecided, gpu_list
from gputui.core.names import RuleId, Severity
from gputui.core.records import frozen
from gputui.core.units import fmt_duration


@frozen
class _Stall:
    """A job whose ranks do no work: who spins, who idles, who is gone, since when."""

    job: Job
    spinning: tuple[Spin, ...]
    idle: tuple[tuple[int, float], ...]  # (GPU, idle since)
    gone: tuple[int, ...]  # local ranks
    since: float
    #: (GPU, its last reading) of the job's GPUs that stopped answering (lost)
    lost: tuple[tuple[int, float], ...] = ()
    #: each idle rank's process CPU (% of a core, over the window; None: not read)
    odd_cpu: tuple[tuple[Rank, float | None], ...] = field(default=())
    #: the job's GPUs whose rank works while the others wait for it: (GPU, utilisation, W)
    working: tuple[tuple[int, float | None, float | None], ...] = ()

    def working_odd(self, busy_pct: float) -> bool:
        """The odd ranks all work on their CPUs (a save, an evaluation: or stuck there)."""
        return (
            bool(self.odd_cpu)
            and not self.gone
            and not self.lost
            and all(c is not None and c >= busy_pct for _, c in self.odd_cpu)
        )


def _stall(ctx: Context, job: Job) -> _Stall | None:
    """The job's ranks as they are now: a stall where some spin without work and none
    works (the others idle, or gone)."""
    samples = {s.index: (s, d) for s, d in ctx.samples()}
    if any(g in ctx.frame.processes_unread for g in job.gpus):
        return None
    spinning, idle, lost, working = [], [], [], []
    for gpu in job.gpus:
        if gpu not in samples:  # lost: its rank will never join
            lost.append((gpu, ctx.history.last_seen(gpu) or ctx.frame.time))
            continue
        sample, device = samples[gpu]
        found = spin(ctx, sample, device)
        if found is not None:
            spinning.append(found)
            continue
        since = idle_since(ctx, gpu)
        if since is None:  # a rank works: the others wait for it (a straggler, or stuck)
            working.append((gpu, sample.util_gpu, sample.power_w))
            continue
        idle.append((gpu, since))
    if not spinning:
        return None
    gone = job.gone()
    starts = [s.since for s in spinning] + [since for _, since in (*idle, *lost)]
    cpu = []
    for gpu, _ in idle:
        for rank in job.on(gpu):
            used = ctx.cpu_of(rank.process.pid)
            cpu.append((rank, used.main_pct if used is not None else None))
    return _Stall(
        job=job,
        spinning=tuple(spinning),
        idle=tuple(idle),
        gone=tuple(gone),
        since=max(starts),
        lost=tuple(lost),
        odd_cpu=tuple(cpu),
        working=tuple(working),
    )


def _ranks_on(job: Job, gpus: Sequence[int]) -> str:
    return names_of([r for gpu in gpus for r in job.on(gpu)])


def _spinning_line(stall: _Stall, now: float) -> str:
    """What the waiting ranks' readings say, together: 'GPUs 0-2 (rank 0, rank 1, rank 2)
    at 100 % utilisation for 4 min 10 s with no work: 118-131 W of 700 W, ...'."""
    spins = stall.spinning
    gpus = [s.gpu for s in spins]
    parts = []
    watts = [s.power_w for s in spins if s.power_w is not None]
    limits = [s.limit_w for s in spins if s.limit_w]
    if watts and limits:
        low, high = min(watts), max(watts)
        span = f"{low:.0f} W" if round(low) == round(high) else f"{low:.0f}-{high:.0f} W"
        parts.append(f"{span} of {max(limits):.0f} W")
    for name, values, unit in (
        ("memory activity", [s.mem_pct for s in spins], " %"),
        ("SM activity", [s.sm_pct for s in spins], " % (GPM)"),
    ):
        known = [round(v) for v in values if v is not None]
        if known:
            upto = "up to " if min(known) != max(known) else ""
            parts.append(f"{name} {upto}{max(known)}{unit}")
    links = [v for s in spins for v in (s.pcie_bps, s.nvlink_bps) if v is not None]
    if links:
        parts.append(f"PCIe and NVLink traffic up to {gb(max(links))}")
    util = min(s.util for s in spins)
    return (
        f"{gpu_list(gpus)} ({_ranks_on(stall.job, gpus)}) at {util:.0f} % utilisation for "
        f"{fmt_duration(now - max(s.since for s in spins))} with no work: " + ", ".join(parts)
    )


def _odd_lines(stall: _Stall, now: float, busy_pct: float) -> list[str]:
    job, lines = stall.job, []
    for gpu, since in stall.idle:
        for rank in job.on(gpu):
            cpu = next((c for r, c in stall.odd_cpu if r == rank), None)
            if cpu is None:
                does = "its process's CPU was not read"
            elif cpu >= busy_pct:
                does = (
                    f"its process works on the CPU ({cpu:.0f} %): a save, an evaluation, or "
                    "stuck in host code"
                )
            else:
                does = f"its process at {cpu:.0f} % CPU: it waits on something else"
            lines.append(
                f"GPU {gpu} ({rank.name}, pid {rank.process.pid}) idle for "
                f"{fmt_duration(now - since)}, not in the collective; {does}"
            )
    for gpu, util, watts in stall.working:
        said = ", ".join(
            part
            for part in (
                f"{util:.0f} % utilisation" if util is not None else "",
                f"{watts:.0f} W" if watts is not None else "",
            )
            if part
        )
        lines.append(
            f"GPU {gpu} ({_ranks_on(job, [gpu])}) works alone ({said or 'readings missing'}): "
            f"none of the others did any work for {fmt_duration(now - stall.since)}"
        )
    for gpu, seen in stall.lost:
        lines.append(
            f"GPU {gpu} ({_ranks_on(job, [gpu])}) lost: no reading for "
            f"{fmt_duration(now - seen)} (gpu-errors says why); its rank cannot join"
        )
    if stall.gone:
        missing = ", ".join(str(k) for k in stall.gone)
        lines.append(
            f"LOCAL_RANK {missing} gone: its launcher started {job.local_size} ranks here, "
            f"{len(job.ranks)} still hold a GPU; the others wait for the missing one"
        )
    if not lines:
        here = f"{len(job.ranks)} here of WORLD_SIZE={job.world}" if job.world else "all here"
        lines.append(
            f"every rank of the job on this node waits ({here}): the rank they wait for is "
            "on another node, or the ranks called different collectives"
        )
    return lines


def _remedies(stall: _Stall) -> tuple[str, ...]:
    odd = [r for gpu, _ in stall.idle for r in stall.job.on(gpu)]
    waiting = [r for s in stall.spinning for r in stall.job.on(s.gpu)]
    first: list[str] = []
    alone = [r for gpu, _, _ in stall.working for r in stall.job.on(gpu)]
    if alone:
        first.append(
            f"If {alone[0].name}'s work alone is meant (an evaluation or a save on one rank), "
            "the others wait for it: spread it over the ranks or move it out of the training "
            f"loop; if not, see where it is: py-spy dump --native --pid {alone[0].process.pid}"
        )
    if odd:
        pids = " ".join(str(r.process.pid) for r in odd[:2])
        first.append(
            f"Dump the odd rank's stacks: py-spy dump --native --pid {pids}; what it waits "
            "on (I/O, a lock, a data loader, another collective) is the cause"
        )
    if stall.gone:
        first.append(
            "The missing rank's process died: its log, and dmesg -T | grep -i -e oom -e xid, "
            "say why; the others wait until the collective times out"
        )
    return (*first, *waiting_remedies(str(waiting[0].process.pid)))


def waiting_remedies(pid: str) -> tuple[str, ...]:
    """What to do about ranks that wait in a collective, the first of them ``pid`` (the
    engine's form, which sees no process, names it in words)."""
    return (
        f"py-spy dump --pid {pid} (each waiting rank): they should all sit in the same "
        "collective; one in another is a mismatch (ranks that took different code paths)",
        "Log each collective: rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL",
        "Record the collectives: TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
        "(PyTorch's flight recorder dumps each rank's last collectives at a timeout; its "
        "fr_trace analyzer names the rank that did not join)",
        "Fail fast rather than hang: init_process_group(timeout=timedelta(minutes=10)) with "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
    )


def _verdict(ctx: Context, stall: _Stall) -> tuple[float, Severity, str]:
    """How long the stall must hold, how severe it is then, and its title."""
    t = ctx.t
    odd = [r.name for gpu, _ in (*stall.idle, *stall.lost) for r in stall.job.on(gpu)]
    odd += [f"LOCAL_RANK {k}" for k in stall.gone]
    who = ", ".join(odd[:3]) + (", ..." if len(odd) > 3 else "")
    if stall.working:
        alone = names_of([r for gpu, _, _ in stall.working for r in stall.job.on(gpu)], 3)
        return (
            t.hang_unseen_s,
            Severity.WARNING,
            f"Stalled: the job's ranks wait in a collective while {alone} works alone",
        )
    if not odd:
        return (
            t.hang_unseen_s,
            Severity.WARNING,
            "Probable hang: every rank of the job here waits in a collective",
        )
    if stall.working_odd(t.hang_cpu_pct):
        return (
            t.hang_unseen_s,
            Severity.WARNING,
            f"Stalled: the job's ranks wait in a collective while {who} works on its CPU",
        )
    title = f"Probable hang: the job's ranks wait in a collective for {who}"
    return t.hang_s, Severity.CRITICAL, title


def collective_hang(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    now = ctx.frame.time
    for job in jobs_here(ctx):
        stall = _stall(ctx, job)
        if stall is None:
            continue
        needed, severity, title = _verdict(ctx, stall)
        held = now - stall.since
        gpus = [s.gpu for s in stall.spinning] + [gpu for gpu, _ in (*stall.idle, *stall.lost)]
        if held < needed:
            for gpu in gpus:
                ctx.cannot_judge(
                    RuleId.COLLECTIVE_HANG,
                    gpu,
                    f"ranks wait in a collective without work for {fmt_duration(held)}; a "
                    f"hang is called after {fmt_duration(needed)} (a checkpoint save or an "
                    "evaluation on one rank pauses the others so for a while)",
                    Undecided.PENDING,
                )
            continue
        evidence = (
            _spinning_line(stall, now),
            *_odd_lines(stall, now, t.hang_cpu_pct),
            f"ranks of one launcher job ({' '.join(job.key)})",
            f"{'the others waited' if stall.working else 'no work anywhere in the job'} for "
            f"{fmt_duration(held)}: a save or an evaluation on one rank is called a stall "
            f"after {fmt_duration(t.hang_unseen_s)}, anything else a hang after "
            f"{fmt_duration(t.hang_s)}",
        )
        remedies = _remedies(stall)
        for gpu in gpus:
            yield Candidate(
                rule=RuleId.COLLECTIVE_HANG,
                severity=severity,
                gpu=gpu,
                title=title,
                evidence=evidence,
                remedies=remedies,
                since=stall.since,
            )


BUSY_TITLE = "Busy without work: a kernel runs but nothing is computed or moved"


def _alone_lines(ctx: Context, gpu: int, found: Spin) -> list[str]:
    lines = [found.words()]
    procs = [p for p in ctx.processes(gpu) if "compute" in p.kind]
    if gpu in ctx.frame.processes_unread:
        lines.append("its process list could not be read")
    elif not procs:
        lines.append(
            "no process is listed on it: a context whose process is gone, or the work of a "
            "process this machine does not show"
        )
    for proc in procs[:2]:
        cpu = f" at {proc.cpu_percent:.0f} % CPU" if proc.cpu_percent is not None else ""
        who = f"{proc.name or 'process'}" + (f" ({proc.user})" if proc.user else "")
        world = first_set(env_dict(proc.env), WORLD) or ""
        many = world.isdigit() and int(world) > 1
        rank = f", a rank of a job of {world} (its peers are elsewhere)" if many else ""
        lines.append(f"pid {proc.pid} {who}{cpu}{rank}")
    return lines


def busy_no_work(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    in_jobs = {gpu for job in jobs_here(ctx) for gpu in job.gpus}
    for sample, device in ctx.samples():
        if sample.index in in_jobs:
            continue  # a rank of a job here: collective-hang judges it with its peers
        found = spin(ctx, sample, device)
        if found is None:
            continue
        if found.seconds < t.spin_alone_s:
            ctx.cannot_judge(
                RuleId.BUSY_NO_WORK,
                sample.index,
                f"busy without work for {fmt_duration(found.seconds)}; called after "
                f"{fmt_duration(t.spin_alone_s)}",
                Undecided.PENDING,
            )
            continue
        pid = next((p.pid for p in ctx.processes(sample.index)), None)
        dump = f"py-spy dump --native --pid {pid}" if pid is not None else "py-spy dump --pid PID"
        where, number = smi_target(device, sample.index)
        yield Candidate(
            rule=RuleId.BUSY_NO_WORK,
            severity=Severity.WARNING,
            gpu=sample.index,
            title=BUSY_TITLE,
            evidence=tuple(_alone_lines(ctx, sample.index, found)),
            remedies=busy_remedies(dump, where, str(number)),
            since=found.since,
        )


def busy_remedies(dump: str, where: str, number: str) -> tuple[str, ...]:
    """What to do about a GPU busy without work: ``dump`` the command that shows where its
    process waits, ``where`` the node's prefix ("On NODE: "), ``number`` the GPU's there."""
    return (
        f"See where its host thread waits: {dump}; a wait on a CUDA synchronize or a "
        "collective means the kernel itself never finishes",
        "A rank of a job on other nodes waits in a collective: find the rank that "
        "does not join (NCCL_DEBUG=INFO, TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1)",
        f"{where}No process left on it: nvidia-smi --query-compute-apps="
        "pid,used_memory --format=csv shows what the driver still holds; once nothing "
        f"runs there, reset the GPU (nvidia-smi -r -i {number}, as root) or reboot",
    )


RULES = (
    Rule(
        RuleId.COLLECTIVE_HANG,
        "stuck",
        "per tick, each rank's GPU: utilisation, power against the enforced limit, memory "
        "activity, SM activity (GPM), PCIe traffic, NVLink traffic; the ranks of each "
        "launcher job (MASTER_ADDR/MASTER_PORT, SLURM_JOB_ID/SLURM_STEP_ID, an MPI world), "
        "LOCAL_WORLD_SIZE, the odd rank's CPU",
        "some ranks of one job busy without work (utilisation >= {t.spin_util_pct:g} % every "
        "tick; power <= {t.spin_power_share:share} of the limit, memory activity <= "
        "{t.spin_mem_pct:g} %, SM activity <= {t.spin_sm_pct:g} %, two of these read and none "
        "above; PCIe + NVLink < {t.spin_link_bps:mbps}) while no rank works: the others idle "
        "(<= {t.starved_idle_util_pct:g} %) or gone, for {t.hang_s:g} s (critical); or for "
        "{t.hang_unseen_s:g} s where the idle rank's process works on its CPU (>= "
        "{t.hang_cpu_pct:g} %), every rank here waits, or one rank works alone while the "
        "others wait without a tick of work (warning); watching before that",
        "py-spy dump of the odd rank and the waiting ones, NCCL_DEBUG=INFO, the flight "
        "recorder (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT), a collective "
        "timeout",
        collective_hang,
        needs=("util_gpu",),
        never_claims="a hang where the waiting ranks still work part of each tick (a "
        "straggler's peers wait in part of every step: straggler says so); from a pause "
        "shorter than {t.hang_s:g} s "
        "(an epoch's end, a rank finishing first); from utilisation alone: memory-bound "
        "decode keeps its memory busy at modest power and is work",
    ),
    Rule(
        RuleId.BUSY_NO_WORK,
        "stuck",
        "per tick: utilisation, power against the enforced limit, memory activity, SM "
        "activity (GPM), PCIe and NVLink traffic; the GPU's processes",
        "a GPU that is no rank of a job here busy without work (as collective-hang reads "
        "it) for {t.spin_alone_s:g} s; watching before that",
        "py-spy dump --native --pid PID; for a rank of a job elsewhere NCCL_DEBUG=INFO and "
        "the flight recorder; nvidia-smi -r once nothing runs there",
        busy_no_work,
        needs=("util_gpu",),
        never_claims="work from utilisation alone, or no work from a GPU that computes "
        "little but moves memory (memory-bound decode)",
    ),
)
