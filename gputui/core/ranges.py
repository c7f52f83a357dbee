"""What a GPU reading can be: the range of every numeric field of a ``GpuSample``.

A reading outside its range came from no GPU (a hostile or broken page, a doctored
recording): it is unknown, ``None``, as a reading the board does not offer. Checked once,
where a reading enters from outside (a recording, a remote page, a Prometheus answer);
NVML's own readings are checked where they are read.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from typing import Final, TypeVar

from gputui.core.model import GpuSample, MigInstance, NvLinkSample

T = TypeVar("T", MigInstance, NvLinkSample)

_COUNT: Final = (0.0, 2.0**63)  # a counter: errors, replays, pages, rows
_PERCENT: Final = (0.0, 100.0)
_CLOCK: Final = (0.0, 100_000.0)  # MHz
_WATTS: Final = (0.0, 100_000.0)  # a board draws hundreds; a rack's share is no GPU
_MEMORY: Final = (0.0, 2.0**50)  # bytes: a PiB of GPU memory is no board yet
_RATE: Final = (0.0, 1e13)  # bytes/s: 10 TB/s, past any PCIe link
_SECONDS: Final = (0.0, 1e10)  # violation counters: three centuries

#: field -> (lowest, highest), both included
RANGES: Final[dict[str, tuple[float, float]]] = {
    "util_gpu": _PERCENT,
    "util_mem": _PERCENT,
    "sm_activity": _PERCENT,
    "tensor_activity": _PERCENT,
    "fan_pct": (0.0, 255.0),  # of the rated maximum: some boards run above 100 % for real
    "fan_rpm": (0.0, 30_000.0),  # a server blower turns at up to ~20,000 a minute
    "sm_clock_mhz": _CLOCK,
    "mem_clock_mhz": _CLOCK,
    "graphics_clock_mhz": _CLOCK,
    "app_sm_clock_mhz": _CLOCK,
    "temp_c": (-60.0, 250.0),
    "mem_temp_c": (-60.0, 250.0),
    "temp_margin_c": (-100.0, 200.0),
    "power_w": _WATTS,
    "power_limit_w": _WATTS,
    "pstate": (0.0, 15.0),
    "clock_reasons": (0, 2**64 - 1),  # an int: a float would round it up to 2**64
    "mem_used": _MEMORY,
    "mem_free": _MEMORY,
    "mem_total": _MEMORY,
    "mem_reserved": _MEMORY,
    "pcie_gen": (1.0, 16.0),
    "pcie_width": (1.0, 64.0),
    "pcie_rx_bps": _RATE,
    "pcie_tx_bps": _RATE,
    "pcie_replay_count": _COUNT,
    "ecc_volatile_corrected": _COUNT,
    "ecc_volatile_uncorrected": _COUNT,
    "ecc_aggregate_uncorrected": _COUNT,
    "remapped_rows_corrected": _COUNT,
    "remapped_rows_uncorrected": _COUNT,
    "retired_pages_sbe": _COUNT,
    "retired_pages_dbe": _COUNT,
    "energy_j": (0.0, 1e15),
    "violation_power_s": _SECONDS,
    "violation_thermal_s": _SECONDS,
    "violation_board_s": _SECONDS,
    "violation_reliability_s": _SECONDS,
    "nvlink_errors": _COUNT,
}


#: the readings of a GPU's parts, by the same rule
MIG_RANGES: Final[dict[str, tuple[float, float]]] = {
    "mem_used": _MEMORY,
    "mem_total": _MEMORY,
    "sm_activity": _PERCENT,
    "gr_active": _PERCENT,
    "tensor_activity": _PERCENT,
}
NVLINK_RANGES: Final[dict[str, tuple[float, float]]] = {
    "rx_bps": _RATE,
    "tx_bps": _RATE,
    "crc_errors": _COUNT,
    "replay_errors": _COUNT,
    "recovery_errors": _COUNT,
}


def in_range(
    field: str, value: float | None, ranges: dict[str, tuple[float, float]] = RANGES
) -> bool:
    if value is None:
        return True
    low, high = ranges[field]
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and low <= value <= high  # before isfinite, which cannot take an int past a float
        and math.isfinite(value)
    )


class _Table:
    """One class's ranges, read in one call: every sample of every tick passes here."""

    def __init__(self, ranges: dict[str, tuple[float, float]]) -> None:
        self.ranges = ranges
        self.fields = tuple(ranges)
        self.read = operator.attrgetter(*self.fields)
        self.bounds = tuple(ranges.values())

    def outside(self, obj: object) -> dict[str, None]:
        wrong: dict[str, None] = {}
        values = self.read(obj)
        for field, value, (low, high) in zip(self.fields, values, self.bounds, strict=True):
            # the common case at once: a plain int or float within its bounds (finite
            # bounds, so NaN and infinities fail the comparison); the rest the long way
            if value is None or (type(value) in _PLAIN and low <= value <= high):
                continue
            if not in_range(field, value, self.ranges):
                wrong[field] = None
        return wrong


_PLAIN: Final = (int, float)
_SAMPLE, _MIG, _NVLINK = _Table(RANGES), _Table(MIG_RANGES), _Table(NVLINK_RANGES)


def _part(obj: T, table: _Table) -> T:
    wrong = table.outside(obj)
    return dataclasses.replace(obj, **wrong) if wrong else obj  # type: ignore[arg-type]


def within_ranges(sample: GpuSample) -> GpuSample:
    """``sample`` with every reading outside its range made unknown (the same object
    when all are in range, the common case), its MIG instances' and links' too."""
    wrong: dict[str, object] = dict(_SAMPLE.outside(sample))
    samples = tuple(s for s in sample.util_samples if in_range("util_gpu", s))
    if len(samples) != len(sample.util_samples):
        wrong["util_samples"] = samples
    mig = tuple(_part(m, _MIG) for m in sample.mig_instances)
    if any(a is not b for a, b in zip(mig, sample.mig_instances, strict=True)):
        wrong["mig_instances"] = mig
    links = tuple(_part(n, _NVLINK) for n in sample.nvlinks)
    if any(a is not b for a, b in zip(links, sample.nvlinks, strict=True)):
        wrong["nvlinks"] = links
    return dataclasses.replace(sample, **wrong) if wrong else sample  # type: ignore[arg-type]
