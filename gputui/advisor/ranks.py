"""The ranks of each distributed job on this node: which process is which rank, the GPU
it works on, how many ranks its launcher started here. The hang and placement rules
read them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gputui.advisor.context import Context
from gputui.advisor.jobs import env_dict
from gputui.advisor.pipeline import job_of
from gputui.core.model import ProcessSample
from gputui.core.records import frozen

#: the environment variables that say a process's rank, its rank on this node, how many
#: ranks its launcher started here and in all (torchrun, Open MPI, PMI, Slurm)
RANK: Final = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK")
LOCAL_RANK: Final = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")
LOCAL_SIZE: Final = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")
WORLD: Final = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def first_set(env: dict[str, str], names: Sequence[str]) -> str | None:
    """The value of the first of ``names`` set to something."""
    return next((env[n].strip() for n in names if env.get(n, "").strip()), None)


@frozen
class Rank:
    #: its process where it holds the most GPU memory: the GPU it works on (a stray
    #: context on another GPU is not its place)
    process: ProcessSample
    name: str  # "rank 3", or its pid where no variable says
    local: int | None  # LOCAL_RANK
    #: its other entries: contexts it opened on other GPUs too
    elsewhere: tuple[ProcessSample, ...] = ()


@frozen
class Job:
    key: tuple[str, ...]
    ranks: tuple[Rank, ...]
    local_size: int | None  # the ranks its launcher started on this node
    world: str | None

    @property
    def gpus(self) -> tuple[int, ...]:
        return tuple(sorted({r.process.gpu_index for r in self.ranks}))

    def on(self, gpu: int) -> list[Rank]:
        return [r for r in self.ranks if r.process.gpu_index == gpu]

    def gone(self) -> list[int]:
        """The local ranks its launcher started here whose process holds no GPU now."""
        if self.local_size is None or len(self.ranks) >= self.local_size:
            return []
        seen = {r.local for r in self.ranks}
        if None in seen:
            return []  # which ones are missing cannot be told
        return [k for k in range(self.local_size) if k not in seen]


def names_of(ranks: Sequence[Rank], most: int = 6) -> str:
    """'rank 0, rank 1, rank 2' (the first ``most``, then '...')."""
    names = [r.name for r in ranks]
    return ", ".join(names[:most]) + (", ..." if len(names) > most else "")


def _rank(entries: Sequence[ProcessSample]) -> Rank:
    """A process's entries (one per GPU it has a context on) as one rank."""
    ordered = sorted(entries, key=lambda p: (-(p.gpu_memory or 0), p.gpu_index))
    main = ordered[0]
    env = env_dict(main.env)
    rank, local = first_set(env, RANK), first_set(env, LOCAL_RANK)
    return Rank(
        main,
        f"rank {rank}" if rank is not None else f"pid {main.pid}",
        int(local) if local is not None and local.isdigit() else None,
        tuple(ordered[1:]),
    )


def jobs_here(ctx: Context) -> list[Job]:
    """The launcher jobs with ranks on this node's GPUs (worked out once a judgement)."""
    found = ctx.shared.get("launcher jobs")
    if isinstance(found, list):
        return found
    by_key: dict[tuple[str, ...], dict[int, list[ProcessSample]]] = {}
    for proc in ctx.frame.processes:
        key = job_of(proc)
        if key is not None and proc.visible:
            by_key.setdefault(key, {}).setdefault(proc.pid, []).append(proc)
    jobs = []
    for key, procs in by_key.items():
        ranks = sorted(
            (_rank(entries) for entries in procs.values()),
            key=lambda r: (r.process.gpu_index, r.process.pid),
        )
        env = env_dict(ranks[0].process.env)
        size = first_set(env, LOCAL_SIZE)
        local_size = int(size) if size is not None and size.isdigit() else None
        jobs.append(Job(key, tuple(ranks), local_size, first_set(env, WORLD)))
    ctx.shared["launcher jobs"] = jobs
    return jobs
