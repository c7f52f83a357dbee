"""What every framework's callback shares: its options, the watch it makes for this rank,
and where the run's report goes. Imports no framework."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gputui.api.gpus import Gpus
from gputui.api.watch import Watch, watch
from gputui.core.config import DEFAULT_HISTORY_S, DEFAULT_INTERVAL_S

#: the report's file name beside the checkpoints (a rank other than the first adds its own)
REPORT_NAME = "gputui-report.html"


@dataclass
class Options:
    """A callback's options, as its constructor takes them.

    ``gpus``: ``"node"`` (the default: the node's first rank watches every GPU of the node,
    the others none), ``"own"`` (each rank its own GPU, each writing its own report), or
    what ``gputui.watch`` takes. ``log_every``: steps between two logs (None: the
    framework's own logging cadence). ``report``: write the run's report beside the
    checkpoints at the end of fit. ``clock`` and ``sample_every_s`` are for tests on a
    faster clock."""

    gpus: Gpus = "node"
    interval_s: float = DEFAULT_INTERVAL_S
    history_s: float = DEFAULT_HISTORY_S
    log_every: int | None = None
    report: bool = True
    processes: bool = True
    clock: Callable[[], float] = time.time
    sample_every_s: float | None = None


def report_name(global_rank: int) -> str:
    return REPORT_NAME if not global_rank else f"gputui-report-rank{global_rank}.html"


def make_watch(options: Options, rank: int) -> Watch:
    """This rank's watch: ``rank`` is its index on the node (for ``"own"``, its device's
    place among the GPUs CUDA lets it see). Its report's place is set at the end of fit."""
    return watch(
        options.gpus,
        interval_s=options.interval_s,
        history_s=options.history_s,
        processes=options.processes,
        clock=options.clock,
        sample_every_s=options.sample_every_s,
        rank=rank,
    )


def finish(watch: Watch, report_dir: Path | None, global_rank: int) -> Path | None:
    """Stop the watch and write the run's report into ``report_dir`` (None: no report)."""
    if report_dir is not None:
        watch.report_path = report_dir / report_name(global_rank)
    return watch.stop()
