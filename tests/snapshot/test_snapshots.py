"""SVG snapshots of the main layouts, from the same factory the CLI uses, on a fixed clock.

Regenerate after an intended change of the screen: pytest tests/snapshot --snapshot-update
(and look at the files in tests/snapshot/__snapshots__ before committing them).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import DemoApp

SnapCompare = Callable[..., bool]

#: (columns, rows, GPUs): the sizes users run at, with the node sizes that strain them
SIZES = [(160, 50, 8), (120, 40, 8), (80, 24, 8), (100, 30, 16)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}-{g}gpus" for w, h, g in SIZES])
def test_default_mix(
    demo_app: DemoApp, snap_compare: SnapCompare, size: tuple[int, int, int]
) -> None:
    width, height, gpus = size
    assert snap_compare(demo_app(None, gpus), terminal_size=(width, height))


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_overview(demo_app: DemoApp, snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(None, 8), press=["o"], terminal_size=size)


def test_thermal_gpu_selected(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 8), press=["1"], terminal_size=(160, 50))


def test_help(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 4), press=["question_mark"], terminal_size=(80, 24))


def test_all_processes(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 8), press=["a"], terminal_size=(120, 40))


def test_ascii_terminal(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    """TERM=linux or a non-UTF-8 locale: no block, braille or box-drawing glyphs."""
    assert snap_compare(demo_app(None, 8, ascii=True), terminal_size=(80, 24))
