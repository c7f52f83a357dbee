"""The report's words and numbers, shared by the HTML page and the Markdown summary: the
run's facts, the "where the time went" rows, the worst stretches, the findings in time
order. Plain strings (outside text masked unless kept); each surface escapes them."""

from __future__ import annotations

import time

from gputui import __version__
from gputui.core.model import finding_order
from gputui.core.records import frozen
from gputui.core.units import fmt_duration
from gputui.exporters.report.accounting import CAUSES, Account, Accounting, Cause, Stretch
from gputui.exporters.report.charts import gpu_name, text
from gputui.exporters.report.run import Run
from gputui.sampling.runlog import Episode

#: how the accounting counts, for the reader (accounting.py's rules, in short)
METHOD = (
    "Each tick of each GPU counts once, for the first of: no reading (not running); a "
    "finding covering it (a hung collective or a GPU busy without work, idle-allocated, "
    "thermal or power throttling where the tick's clock-event reasons show it, even at a "
    "board's default limit, input "
    "starvation / I/O / a saturated link, a straggler among its job's ranks); no work that "
    "tick (idle with memory held, else not running); otherwise busy and unthrottled. GPU "
    "time lost: the SM clock given up to a throttle against the board's maximum, the share "
    "of time a starved or waiting GPU did no work, all of a hung, idle or unused GPU's time."
)


def when(run: Run, moment: float, seconds: bool | None = None) -> str:
    """A time as the machine that made the report reads it, with its UTC offset."""
    if seconds is None:
        seconds = run.end - run.start < 6 * 3600
    stamp = time.localtime(moment)
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", stamp)


def zone(run: Run) -> str:
    return time.strftime("UTC%z", time.localtime(run.start))


@frozen
class Row:
    name: str
    account: Account


def rows(run: Run, accounting: Accounting) -> list[Row]:
    """One row per GPU, then all GPUs together (GPU time) where there are several."""
    out = [Row(gpu_name(run, index), acc) for index, acc in accounting.gpus.items()]
    if len(out) > 1:
        out.append(Row(f"all {len(out)} GPUs", accounting.total))
    return out


def pct(account: Account, cause: Cause) -> str:
    share = account.share(cause)
    if account.seconds[cause] == 0.0:
        return "-"
    return f"{100 * share:.1f} %" if share >= 0.001 else "<0.1 %"


def gpu_hours(seconds: float) -> str:
    return f"{seconds / 3600.0:.2f}"


def stretch_line(run: Run, stretch: Stretch) -> str:
    """ "from 02:10 to 04:40, GPU 3, thermally throttled, -31 % SM clock (0.42 GPU-h lost)"."""
    return (
        f"from {when(run, stretch.start)} to {when(run, stretch.end)} "
        f"({fmt_duration(stretch.end - stretch.start)}), GPU {stretch.gpu}, "
        f"{stretch.cause.label}, {stretch.figure} ({gpu_hours(stretch.lost_s)} GPU-h lost)"
    )


def worst(accounting: Accounting) -> list[Stretch]:
    """The worst stretch of each cause over all GPUs, the costliest first."""
    found = [accounting.total.worst[c] for c in CAUSES if c in accounting.total.worst]
    return sorted(found, key=lambda s: (-s.lost_s, -s.seconds))


def facts(run: Run, keep_secrets: bool) -> list[tuple[str, str]]:
    span = run.end - run.start
    detail = f" ({text(run.source.detail, keep_secrets)})" if run.source.detail else ""
    return [
        ("From", text(run.origin, keep_secrets)),
        ("Source", f"{run.source.label}{detail}"),
        ("Run", f"{when(run, run.start)} to {when(run, run.end)} {zone(run)}"),
        (
            "Wall time",
            f"{fmt_duration(span)} ({len(run.times):,} ticks, every {run.interval_s:g} s)",
        ),
        ("GPUs", str(len(run.tracks))),
        ("Made by", f"gputui {__version__}, the same rules as the live screen"),
        ("Findings", _judged(run)),
    ]


def _judged(run: Run) -> str:
    """Where the findings come from: the recorder's advisor, or this report's."""
    every = f"every {run.thresholds.judge_every_s:g} s"
    if run.judged_live:
        return f"judged live as the run went ({every})"
    return f"judged by this report over the run's readings ({every})"


def episodes(run: Run) -> list[Episode]:
    """Every finding's episodes in time order (ties: most severe first)."""
    return sorted(run.episodes, key=lambda e: (e.since, finding_order(e.finding)))


def episode_head(run: Run, episode: Episode, keep_secrets: bool) -> str:
    f = episode.finding
    where = "host" if f.gpu is None else f"GPU {f.gpu}"
    return (
        f"{when(run, episode.since)} to {when(run, episode.until)} "
        f"({fmt_duration(episode.until - episode.since)}) · {where} · {f.severity} · "
        f"{f.rule}: {text(f.title, keep_secrets)}"
    )
