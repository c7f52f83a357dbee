"""The rules' windows at the source's own pace.

A local GPU is read every second: 30 s of history is 30 readings. A cluster's exporters are
scraped every 15, 30 or 60 s: the same 30 s hold one or two readings, and a rule that asks
for ``min_points`` of them would never judge (and the pane would say "nothing slows these
GPUs down"). So every window a rule reads is stretched to hold ``min_points`` readings at
the source's cadence with one to spare (a scrape the server missed, a read that came late)
and half a reading's slack for the scrapes' jitter: 83 s at 15 s, 2 min 45 s at 30 s,
5 min 30 s at 60 s. A finding ends only after two readings without it.
The rules themselves are unchanged: they read ``ctx.t``, which is the stretched copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import lru_cache

from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo
from gputui.sampling.history import History

#: the Thresholds fields that are windows over the history (seconds of readings)
WINDOWS: tuple[str, ...] = (
    "window_s",
    "hot_mean_s",
    "vram_mean_s",
    "vram_growth_s",
    "held_window_s",
    "pcie_replay_window_s",
    "under_used_s",
    "nvlink_window_s",
    "judge_min_s",
)
#: the source's cadence is measured over this much history, on at most this many GPUs
MEASURED_OVER_S = 600.0
MEASURED_GPUS = 16
#: a cadence past this is no scrape interval (a source that stalled): not stretched for
MAX_CADENCE_S = 120.0


def window_for(t: Thresholds, cadence_s: float) -> float:
    """The time ``t.min_points`` readings take at ``cadence_s``, with half a reading of
    slack, and for a source slower than a reading a second (scrapes, which a server can
    miss) one reading to spare: readings at 0, 15, ..., 75 s all lie within 82.5 s, and one
    missed scrape still leaves a rule the readings it needs."""
    spare = 1 if cadence_s > 1.0 else 0
    return (t.min_points + spare - 0.5) * cadence_s


@lru_cache(maxsize=64)
def at_cadence(t: Thresholds, cadence_s: float) -> Thresholds:
    """``t`` with every window at least ``window_for(cadence_s)`` long, and ``end_after_s``
    at least two readings; ``t`` itself when the cadence needs no change."""
    if cadence_s <= 0:
        return t
    span = window_for(t, cadence_s)
    changes: dict[str, float] = {name: span for name in WINDOWS if float(getattr(t, name)) < span}
    if t.end_after_s < 2 * cadence_s:
        changes["end_after_s"] = 2 * cadence_s
    return dataclasses.replace(t, **changes) if changes else t  # type: ignore[arg-type]


def cadence_of(history: History, devices: Mapping[int, DeviceInfo]) -> float:
    """The seconds between the source's own readings: the ticks' for local GPUs (each tick
    reads them, however still they are), and for remote ones (a node's exporter, a
    Prometheus server) the time between their distinct readings, measured on GPUs spread
    over the nodes. Rounded to a whole second so the stretched thresholds are reused; 0.0
    before there are three ticks."""
    tick = history.tick_interval(MEASURED_OVER_S)
    if tick is None:
        return 0.0
    cadence = tick
    remote = [index for index, d in devices.items() if d.node is not None]
    if remote:
        step = max(1, len(remote) // MEASURED_GPUS)
        sample: Sequence[int] = remote[::step][:MEASURED_GPUS]
        cadence = history.reading_interval(sample, MEASURED_OVER_S) or tick
    return float(round(min(cadence, MAX_CADENCE_S)))
