"""What a watch logs: the GPUs' readings since the last log as flat, named numbers (every
logger takes those), the findings as counts and as text, and the step line.

Names, all under ``gputui/`` (``N`` a GPU's NVML index, ``RULE`` a rule's id):

- ``gpuN/util_pct``, ``gpuN/sm_clock_mhz``, ``gpuN/sm_clock_pct`` (of its maximum),
  ``gpuN/temp_c``, ``gpuN/temp_margin_c``, ``gpuN/power_w``, ``gpuN/power_pct`` (of its
  limit), ``gpuN/vram_used_gib``, ``gpuN/vram_pct``: means over the ticks since the last log;
  ``gpuN/throttled_s``: seconds it was held down (heat, the power cap, a slowdown) in them;
- ``findings/critical``, ``findings/warning``, ``findings/info``: findings shown now;
  ``finding/RULE/gpuN`` (``/host``): 1 while that finding shows;
- ``step_s`` (mean), ``step_baseline_s``, ``slowdown_pct``, ``slow_steps``; and per cause
  of the slow steps ``slow/RULE/gpuN/steps`` and ``slow/RULE/gpuN/share_pct``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from gputui.api.records import Finding, Reading, Tick
from gputui.api.steps import StepLine
from gputui.core.names import Severity
from gputui.core.records import frozen

PREFIX: Final = "gputui/"
GIB: Final = 1024**3

#: the readings logged as means: the name and how to read it off a ``Reading``
MEANS: Final[tuple[tuple[str, Callable[[Reading], float | None]], ...]] = (
    ("util_pct", lambda r: r.util_pct),
    ("sm_clock_mhz", lambda r: r.sm_clock_mhz),
    ("sm_clock_pct", lambda r: r.sm_clock_pct),
    ("temp_c", lambda r: r.temp_c),
    ("temp_margin_c", lambda r: r.temp_margin_c),
    ("power_w", lambda r: r.power_w),
    ("power_pct", lambda r: r.power_pct),
    ("vram_used_gib", lambda r: None if r.vram_used is None else r.vram_used / GIB),
    ("vram_pct", lambda r: r.vram_pct),
)


@frozen
class Log:
    """One log's worth: the numbers, the words, the findings that are new."""

    step: int  # steps counted since the watch began
    time: float
    scalars: Mapping[str, float]
    #: the step line, then each new finding in a few lines
    text: str
    new_findings: tuple[Finding, ...]
    steps: StepLine


def where(gpu: int | None) -> str:
    return "host" if gpu is None else f"gpu{gpu}"


def readings(ticks: Sequence[Tick], interval_s: float) -> dict[str, float]:
    """The means of the readings over ``ticks``, and the seconds each GPU was held down."""
    out: dict[str, float] = {}
    by_gpu: dict[int, list[tuple[float, Reading]]] = {}
    for tick in ticks:
        for reading in tick.readings:
            by_gpu.setdefault(reading.gpu, []).append((tick.time, reading))
    for gpu, seen in by_gpu.items():
        alive = [r for _t, r in seen if not r.lost]
        for name, read in MEANS:
            values = [v for v in map(read, alive) if v is not None]
            if values:
                out[f"{PREFIX}gpu{gpu}/{name}"] = sum(values) / len(values)
        held = 0.0
        before: float | None = None
        for time, reading in seen:
            step = interval_s if before is None else time - before
            before = time
            if reading.throttled:
                held += step
        out[f"{PREFIX}gpu{gpu}/throttled_s"] = held
    return out


def findings(shown: Iterable[Finding]) -> dict[str, float]:
    out = {f"{PREFIX}findings/{s.value}": 0.0 for s in Severity}
    for finding in shown:
        out[f"{PREFIX}findings/{finding.severity}"] += 1.0
        out[f"{PREFIX}finding/{finding.rule}/{where(finding.gpu)}"] = 1.0
    return out


def steps(line: StepLine) -> dict[str, float]:
    out: dict[str, float] = {f"{PREFIX}slow_steps": float(line.slow_steps)}
    for name, value in (
        ("step_s", line.mean_s),
        ("step_baseline_s", line.baseline_s),
        ("slowdown_pct", line.slowdown_pct),
    ):
        if value is not None:
            out[PREFIX + name] = value
    for cause in line.causes:
        stem = f"{PREFIX}slow/{cause.rule}/{where(cause.gpu)}"
        out[f"{stem}/steps"] = float(cause.slow_steps)
        out[f"{stem}/share_pct"] = cause.share_pct
    return out


def ended(before: Iterable[Finding], now: Iterable[Finding]) -> dict[str, float]:
    """0 for each finding that showed at the last log and no longer does (a logger that
    draws lines holds the last value it was given)."""
    gone = {(f.rule, f.gpu) for f in before} - {(f.rule, f.gpu) for f in now}
    return {f"{PREFIX}finding/{rule}/{where(gpu)}": 0.0 for rule, gpu in gone}
