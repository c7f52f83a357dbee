"""Where a job's ranks landed: every rank on its own GPU, or crowded on one while the GPUs
given to them sit empty; contexts ranks opened on another rank's GPU.

A rank that makes a CUDA call before ``torch.cuda.set_device(local_rank)`` (or without
it) runs on the first visible GPU: four ranks on GPU 0 time-slice it while GPUs 1-3 idle.
A rank that only touches GPU 0 once (``torch.load`` without ``map_location``, a barrier
before the device is set) leaves a context there: a few hundred MiB of GPU 0's memory per
rank. Independent runs of one script (a sweep) are no ranks of one job: never judged here
(gpu-shared says when several jobs share a GPU).
"""

from __future__ import annotations

from collections.abc import Iterator

from gputui.advisor.context import Context, gib
from gputui.advisor.finding import Candidate
from gputui.advisor.jobs import env_dict, visible_gpus
from gputui.advisor.ranks import Job, jobs_here, names_of
from gputui.advisor.rule import Rule
from gputui.core.judgement import gpu_list
from gputui.core.names import RuleId, Severity
from gputui.core.units import fmt_bytes

_SET_DEVICE = (
    "Give each rank its GPU before any CUDA call: "
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) first thing, then "
    "init_process_group(backend='nccl', device_id=torch.device('cuda', local_rank))"
)


def _empty(ctx: Context, job: Job) -> list[int]:
    """The GPUs visible to the job's ranks that no process uses and that do no work."""
    visible: set[int] = set()
    for rank in job.ranks:
        visible.update(visible_gpus(ctx, env_dict(rank.process.env)))
    samples = {s.index for s, _ in ctx.samples()}
    return sorted(
        gpu
        for gpu in visible
        if gpu in samples
        and gpu not in ctx.frame.processes_unread
        and not ctx.processes(gpu)
        and ctx.under_load(gpu) is False
    )


def _shared_by_design(ctx: Context, gpu: int) -> bool:
    """MPS runs its clients side by side, MIG gives each a slice of its own: ranks placed
    together there are placed on purpose."""
    device = ctx.devices.get(gpu)
    mig = device is not None and bool(device.mig_mode)
    return mig or any("mps" in p.kind for p in ctx.processes(gpu))


def ranks_crowded(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    for job in jobs_here(ctx):
        crowded = [g for g in job.gpus if len(job.on(g)) > 1 and not _shared_by_design(ctx, g)]
        if not crowded:
            continue
        empty = _empty(ctx, job)
        if not empty:
            continue  # no GPU was given to them that they leave unused
        cvd = env_dict(job.ranks[0].process.env).get("CUDA_VISIBLE_DEVICES")
        lines = [
            f"{len(job.on(gpu))} ranks of one job on GPU {gpu} ({names_of(job.on(gpu))}, "
            f"pids {' '.join(str(r.process.pid) for r in job.on(gpu)[:6])}): they "
            "time-slice it, each at a fraction of its pace"
            for gpu in crowded
        ]
        lines.append(
            f"{gpu_list(empty)} visible to them (CUDA_VISIBLE_DEVICES="
            f"{cvd if cvd is not None else 'unset: every GPU'}) hold no process and idle"
        )
        lines.append(f"ranks of one launcher job ({' '.join(job.key)})")
        for gpu in crowded:
            yield Candidate(
                rule=RuleId.RANKS_CROWDED,
                severity=Severity.WARNING,
                gpu=gpu,
                title="Ranks of one job crowd one GPU while the GPUs given to them sit empty",
                evidence=tuple(lines),
                remedies=(
                    _SET_DEVICE,
                    "Or let the launcher pin each rank: CUDA_VISIBLE_DEVICES=$LOCAL_RANK in "
                    "its environment; under Slurm srun --gpus-per-task=1",
                    "Check where each rank runs: nvidia-smi --query-compute-apps="
                    "pid,gpu_uuid,used_memory --format=csv",
                ),
                hold_s=t.crowded_hold_s,
            )


def stray_contexts(ctx: Context) -> Iterator[Candidate]:
    t = ctx.t
    by_gpu: dict[int, list[tuple[str, int, int]]] = {}  # GPU -> (rank, pid, bytes)
    for job in jobs_here(ctx):
        mine = set(job.gpus)
        for rank in job.ranks:
            own = rank.process.gpu_memory or 0
            for other in rank.elsewhere:
                held = other.gpu_memory or 0
                if other.gpu_index not in mine or held > t.stray_context_bytes:
                    continue  # not another rank's GPU, or more than a context: work
                if held * 4 > own:
                    continue  # as much there as on its own GPU: it uses both
                by_gpu.setdefault(other.gpu_index, []).append((rank.name, rank.process.pid, held))
    samples = {s.index: s for s, _ in ctx.samples()}
    for gpu, strays in sorted(by_gpu.items()):
        sample = samples.get(gpu)
        if sample is None:
            continue
        total = sum(held for _, _, held in strays)
        lines = [
            f"{len(strays)} rank(s) of a job working on other GPUs also hold a context here: "
            + ", ".join(f"{name} (pid {pid}) {fmt_bytes(held)}" for name, pid, held in strays[:6]),
            f"{gib(total)} of this GPU's memory taken by them",
        ]
        used = sample.mem_used_pct
        full = used is not None and used >= t.vram_warning_pct
        if used is not None:
            lines.append(f"this GPU's memory {used:.0f} % used" + (": near full" if full else ""))
        yield Candidate(
            rule=RuleId.STRAY_CONTEXTS,
            severity=Severity.WARNING if full else Severity.INFO,
            gpu=gpu,
            title="Other ranks opened CUDA contexts on this GPU: its memory pays for them",
            evidence=tuple(lines),
            remedies=(
                _SET_DEVICE,
                "Load checkpoints onto the rank's own GPU: torch.load(path, "
                "map_location=f'cuda:{local_rank}') (or 'cpu')",
                "Or give each rank only its GPU: CUDA_VISIBLE_DEVICES=$LOCAL_RANK",
            ),
            hold_s=t.crowded_hold_s,
        )


RULES = (
    Rule(
        RuleId.RANKS_CROWDED,
        "5 software / launch",
        "the ranks of each launcher job (MASTER_ADDR/MASTER_PORT, SLURM_JOB_ID/SLURM_STEP_ID, "
        "an MPI world), the GPU each works on, CUDA_VISIBLE_DEVICES, the other GPUs' "
        "processes and load",
        "two or more ranks of one job on one GPU while a GPU visible to them holds no "
        "process and idles, for {t.crowded_hold_s:g} s (outside MPS and MIG)",
        "torch.cuda.set_device(LOCAL_RANK) before any CUDA call, or one GPU per rank from "
        "the launcher",
        ranks_crowded,
        needs_history="",
        never_claims="a mistake in independent runs of one script (a sweep: no ranks of one "
        "job), in ranks that share a GPU because they were given only one, or in MPS clients "
        "and MIG slices",
    ),
    Rule(
        RuleId.STRAY_CONTEXTS,
        "5 software / launch",
        "each rank's processes on every GPU and the memory each holds, the GPUs' memory",
        "info: a rank working on its own GPU also holds a context of at most "
        "{t.stray_context_bytes:gib} (and a quarter of its own) on another rank's GPU, for "
        "{t.crowded_hold_s:g} s; a warning where that GPU's memory is >= "
        "{t.vram_warning_pct:g} % used",
        "set_device first, torch.load(map_location=...), one GPU per rank",
        stray_contexts,
        needs_history="",
        never_claims="a stray context of a process that works on both GPUs (as much memory "
        "on each), or of independent runs",
    ),
)
