"""Whether a GPU does work: a kernel that runs every tick is no proof of it.

NVML's utilisation is the share of time a kernel ran. A collective that waits (NCCL's
kernels spin on a flag until every rank has joined) or any kernel that polls keeps it at
100 % while the board draws near its idle power, its memory and SMs rest and no byte
crosses a link. This module reads those tick by tick, as runs up to now: how long a GPU
has been busy without work, or idle. The hang rules and the straggler rule share it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Final, cast

from gputui.advisor.context import Context, gb
from gputui.core.config import Thresholds
from gputui.core.model import DeviceInfo, GpuSample
from gputui.core.names import Metric
from gputui.core.records import frozen
from gputui.core.units import fmt_duration

#: a tick's verdict: the condition looked for holds (busy without work, or idle), it does
#: not, or unknown (no utilisation; for busy without work also fewer than two of power,
#: memory activity and SM activity read): unknown ticks neither make nor break a run, so
#: one missing reading does not end it
HOLDS: Final = 1
OTHER: Final = 0
UNKNOWN: Final = -1
#: the readings a tick is judged on, in the order ``_tick`` takes them
_READINGS: Final = (
    Metric.UTIL_GPU,
    Metric.POWER_W,
    Metric.POWER_LIMIT_W,
    Metric.UTIL_MEM,
    Metric.SM_ACTIVITY,
    Metric.PCIE_RX_BPS,
    Metric.PCIE_TX_BPS,
)


@frozen
class Spin:
    """A GPU busy without work up to now: since when, and what its readings were over
    that stretch (means of what was read; None where nothing was)."""

    gpu: int
    since: float
    seconds: float
    util: float
    power_w: float | None
    limit_w: float | None
    mem_pct: float | None
    sm_pct: float | None
    pcie_bps: float | None
    nvlink_bps: float | None

    def words(self) -> str:
        """'100 % utilisation for 4 min 10 s with no work: 131 W of 700 W (19 %), memory
        activity 0 %, SM activity 12 % (GPM), PCIe 0.0 GB/s'."""
        parts = []
        if self.power_w is not None and self.limit_w:
            share = 100 * self.power_w / self.limit_w
            parts.append(f"{self.power_w:.0f} W of {self.limit_w:.0f} W ({share:.0f} %)")
        if self.mem_pct is not None:
            parts.append(f"memory activity {self.mem_pct:.0f} %")
        if self.sm_pct is not None:
            parts.append(f"SM activity {self.sm_pct:.0f} % (GPM)")
        if self.pcie_bps is not None:
            parts.append(f"PCIe {gb(self.pcie_bps)}")
        if self.nvlink_bps is not None:
            parts.append(f"NVLink {gb(self.nvlink_bps)}")
        return (
            f"{self.util:.0f} % utilisation for {fmt_duration(self.seconds)} with no work: "
            + ", ".join(parts)
        )


def _tick(t: Thresholds, limit: float, values: Sequence[float]) -> int:
    """One tick's verdict from its readings (``_READINGS``' order, NaN: not read)."""
    util, power, tick_limit, mem, sm, rx, tx = values
    if util != util:
        return UNKNOWN
    if util < t.spin_util_pct:
        return OTHER
    read = 0
    top = tick_limit if tick_limit == tick_limit and tick_limit > 0 else limit
    if power == power and top > 0:
        if power > t.spin_power_share * top:
            return OTHER
        read += 1
    if mem == mem:
        if mem > t.spin_mem_pct:
            return OTHER
        read += 1
    if sm == sm:
        if sm > t.spin_sm_pct:
            return OTHER
        read += 1
    link = (rx if rx == rx else 0.0) + (tx if tx == tx else 0.0)
    if link >= t.spin_link_bps:
        return OTHER
    return HOLDS if read >= 2 else UNKNOWN


def _run(
    columns: Sequence[Sequence[float]], verdict: Callable[[tuple[float, ...]], int]
) -> tuple[int, int, bool]:
    """The run of ticks ``verdict`` calls ``HOLDS`` that reaches the newest, over unknown
    ticks, read from the newest back: the index of its first tick (the columns' length
    without one), how many it holds, and whether a tick that is neither ended it (else it
    may reach further back than the columns)."""
    first = len(columns[0]) if columns else 0
    i, count = first, 0
    for values in zip(*(reversed(column) for column in columns), strict=True):
        i -= 1
        found = verdict(values)
        if found == HOLDS:
            first, count = i, count + 1
        elif found != UNKNOWN:
            return first, count, True
    return first, count, False


def nvlink_bps(sample: GpuSample) -> float | None:
    """The traffic of all its NVLinks together now (read every few seconds); None without
    any reading of it."""
    rates = [r for link in sample.nvlinks for r in (link.rx_bps, link.tx_bps) if r is not None]
    return sum(rates) if rates else None


def spin(ctx: Context, sample: GpuSample, device: DeviceInfo) -> Spin | None:
    """The GPU busy without work up to now, for at least ``min_points`` readings; None
    where it is not (worked out once a judgement)."""
    key = ("spin", sample.index)
    if key not in ctx.shared:
        ctx.shared[key] = _work_out_spin(ctx, sample, device)
    return cast("Spin | None", ctx.shared[key])


def _mean(values: Sequence[float]) -> float | None:
    known = [v for v in values if v == v]
    return sum(known) / len(known) if known else None


def _newest(
    ctx: Context, gpu: int, metrics: Sequence[Metric], verdict: Callable[[tuple[float, ...]], int]
) -> tuple[list[float], list[list[float]], int] | None:
    """The newest run of ticks ``verdict`` calls ``HOLDS``, of ``min_points`` of them at
    least: the times and readings of the ticks read, and where the run begins among them.
    The newest few ticks first, so a GPU that works costs a few ticks, not the history;
    None without such a run (or without the GPU in the history)."""
    history = ctx.history
    total = len(history)
    for size in (min(total, 2 * ctx.t.min_points), total):
        times = history.times()[-size:] if size else []
        columns = [history.series(gpu, metric, size) for metric in metrics]
        if any(len(column) != len(times) for column in columns):
            return None
        first, count, ended = _run(columns, verdict)
        if ended or size >= total:
            break
    return (times, columns, first) if count >= ctx.t.min_points else None


def _work_out_spin(ctx: Context, sample: GpuSample, device: DeviceInfo) -> Spin | None:
    t = ctx.t
    if sample.util_gpu is not None and sample.util_gpu < t.spin_util_pct:
        return None  # not now: no need to read its past (a missing reading: its past tells)
    latest = nvlink_bps(sample)
    if latest is not None and latest >= t.spin_link_bps:
        return None  # data crosses its NVLinks: it works
    limit = device.power_limit_w or math.nan
    found = _newest(ctx, sample.index, _READINGS, lambda values: _tick(t, limit, values))
    if found is None:
        return None
    times, columns, start = found
    util, power, tick_limit, mem, sm, rx, tx = (column[start:] for column in columns)
    return Spin(
        gpu=sample.index,
        since=times[start],
        seconds=times[-1] - times[start],
        util=_mean(util) or 0.0,
        power_w=_mean(power),
        limit_w=_mean(tick_limit) or device.power_limit_w,
        mem_pct=_mean(mem),
        sm_pct=_mean(sm),
        pcie_bps=_mean([a + b for a, b in zip(rx, tx, strict=True)]),
        nvlink_bps=latest,
    )


def idle_since(ctx: Context, gpu: int) -> float | None:
    """When the GPU's run of idle ticks (utilisation at most ``starved_idle_util_pct``)
    up to now began; None where it is not idle now."""
    idle = ctx.t.starved_idle_util_pct

    def verdict(values: tuple[float, ...]) -> int:
        util = values[0]
        return UNKNOWN if util != util else HOLDS if util <= idle else OTHER

    found = _newest(ctx, gpu, (Metric.UTIL_GPU,), verdict)
    return found[0][found[2]] if found is not None else None
