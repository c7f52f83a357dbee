"""Physical ranges of readings (gputui/core/ranges.py): every numeric reading has one, a
value outside it is unknown, and every real or simulated reading is inside."""

from __future__ import annotations

import dataclasses
import gzip
import json
import typing
from pathlib import Path
from typing import Any

import pytest

from gputui.core.manual_clock import ManualClock
from gputui.core.model import GpuSample, MigInstance, NvLinkSample
from gputui.core.ranges import MIG_RANGES, NVLINK_RANGES, RANGES, in_range, within_ranges
from gputui.sources.simulated import SCENARIOS, SimulatedSource

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "h200"

# identities, not readings: numbered by the source, checked where they are parsed
IDENTITIES = {"index", "gpu_instance_id", "compute_instance_id", "link"}


def _numeric(cls: type) -> set[str]:
    """Fields holding a number (int or float, maybe None): not flags, tuples or text."""
    hints = typing.get_type_hints(cls)
    names = set()
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if typing.get_origin(hint) is typing.Final:
            hint = typing.get_args(hint)[0]
        if typing.get_origin(hint) is tuple:
            continue  # util_samples is checked as utilisation, pids are identities
        kinds = set(typing.get_args(hint)) or {hint}
        if kinds & {int, float} and bool not in kinds:
            names.add(f.name)
    return names - IDENTITIES


@pytest.mark.parametrize(
    ("cls", "ranges"),
    [(GpuSample, RANGES), (MigInstance, MIG_RANGES), (NvLinkSample, NVLINK_RANGES)],
)
def test_every_numeric_reading_has_a_range(cls: type, ranges: dict[str, object]) -> None:
    assert _numeric(cls) == set(ranges)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("mem_used", 10**400 // 10**300),
        ("mem_used", -1),
        ("temp_c", 1e300),
        ("temp_c", float("nan")),
        ("power_w", float("inf")),
        ("util_gpu", 101.0),
        ("pcie_gen", 0),
        ("clock_reasons", 2**64),
        ("energy_j", -5.0),
    ],
)
def test_a_reading_outside_its_range_is_unknown(field: str, value: float) -> None:
    changes: dict[str, Any] = {field: value}
    sample = dataclasses.replace(GpuSample(index=0, util_gpu=50.0), **changes)
    cleaned = within_ranges(sample)
    assert getattr(cleaned, field) is None
    assert field == "util_gpu" or cleaned.util_gpu == 50.0


def test_parts_and_per_sample_utilisation_are_checked_too() -> None:
    sample = GpuSample(
        index=0,
        util_samples=(10.0, 250.0, -1.0, 99.0),
        mig_instances=(MigInstance(gpu_instance_id=1, mem_used=-4, sm_activity=30.0),),
        nvlinks=(NvLinkSample(link=0, rx_bps=1e30, crc_errors=3),),
    )
    cleaned = within_ranges(sample)
    assert cleaned.util_samples == (10.0, 99.0)
    assert cleaned.mig_instances[0].mem_used is None
    assert cleaned.mig_instances[0].sm_activity == 30.0
    assert cleaned.nvlinks[0].rx_bps is None and cleaned.nvlinks[0].crc_errors == 3


def test_a_bool_is_not_a_number_of_anything() -> None:
    assert not in_range("pcie_gen", True)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_simulated_reading_is_inside_its_range(scenario: str) -> None:
    clock = ManualClock(1.7e9)
    source = SimulatedSource([scenario] * 4, seed=3, clock=clock)
    source.open()
    for _ in range(120):
        for sample in source.read().gpus:
            assert within_ranges(sample) is sample
        clock.advance(1.0)


@pytest.mark.parametrize("name", ["idle", "heavy", "fed", "starved-main", "starved-workers"])
def test_every_real_h200_reading_is_inside_its_range(name: str) -> None:
    with gzip.open(FIXTURES / f"{name}.jsonl.gz", "rt") as lines:
        ticks = [json.loads(line) for line in lines][1:]
    assert ticks
    for tick in ticks:
        for gpu in tick["frame"]["gpus"]:
            for field, value in gpu.items():
                if field in RANGES:
                    assert in_range(field, value), (name, field, value)
