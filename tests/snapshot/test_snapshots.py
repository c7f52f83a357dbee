"""SVG snapshots of the main layouts, from the same factory the CLI uses, on a fixed clock.

Regenerate after an intended change of the screen: pytest tests/snapshot --snapshot-update
(and look at the files in tests/snapshot/__snapshots__ before committing them).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gputui.view.process_table import SORTS
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


SORT_KEYS = {name: column.key for name, column in SORTS.items()}


@pytest.mark.parametrize("column", list(SORT_KEYS))
def test_every_gpus_processes_sorted_by_each_column_160x50(
    demo_app: DemoApp, snap_compare: SnapCompare, column: str
) -> None:
    """The main screen's table of every GPU's processes (v), sorted by one column's key."""
    keys = ["v", SORT_KEYS[column], "down"]
    assert snap_compare(demo_app(None, 8), press=keys, terminal_size=(160, 50))


@pytest.mark.parametrize("column", list(SORT_KEYS))
def test_every_gpus_processes_sorted_by_each_column_80x24(
    demo_app: DemoApp, snap_compare: SnapCompare, column: str
) -> None:
    """At 80x24 the main table has two rows: the every-process page (a) shows the order."""
    keys = ["a", SORT_KEYS[column]]
    assert snap_compare(demo_app(None, 8), press=keys, terminal_size=(80, 24))


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_the_all_gpus_table_on_the_main_screen(
    demo_app: DemoApp, snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    assert snap_compare(demo_app(None, 8), press=["v"], terminal_size=size)


def test_a_process_looked_into(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(demo_app(None, 8), press=["down", "i"], terminal_size=(120, 40))


def test_light_theme(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    """--theme light (or b): Textual's light theme, every panel in its colours."""
    assert snap_compare(demo_app(None, 8, theme="light"), terminal_size=(120, 40))


def test_tagged_processes(demo_app: DemoApp, snap_compare: SnapCompare) -> None:
    """Two processes tagged (space) in every GPU's table: • marks them, the title counts."""
    keys = ["v", "down", "space", "down", "down", "space"]
    assert snap_compare(demo_app(None, 8), press=keys, terminal_size=(160, 50))
