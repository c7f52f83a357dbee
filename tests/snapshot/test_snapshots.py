"""SVG snapshots of the main layouts, from the same factory the CLI uses, on a fixed clock.

Regenerate after an intended change of the screen: pytest tests/snapshot --snapshot-update
(and look at the files in tests/snapshot/__snapshots__ before committing them).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import DemoApp

SnapCompare = Callable[..., bool]


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_default_mix(demo_app: DemoApp, snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(None, 8 if size[0] > 100 else 4), terminal_size=size)


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_overview(demo_app: DemoApp, snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(None, 8), press=["o"], terminal_size=size)


def test_thermal_gpu_selected(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 8), press=["1"], terminal_size=(160, 50))


def test_help(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 4), press=["question_mark"], terminal_size=(80, 24))
