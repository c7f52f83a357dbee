"""The layout: terminal size and content in, every panel's size out. Pure, so every size
users run at is checked here without a terminal."""

from __future__ import annotations

import pytest

from gputui.view.layout import Layout, layout, places


def _rows(box: Layout) -> int:
    """Rows the panels take below the header, host line and footer."""
    top = box.gpus.height + box.detail.height if box.stacked else box.gpus.height
    bottom = box.advisor.height + box.procs.height if box.bottom_stacked else box.advisor.height
    return top + bottom


@pytest.mark.parametrize(
    ("width", "height", "gpus"),
    [(80, 24, 8), (80, 24, 4), (100, 30, 16), (120, 40, 8), (160, 50, 8), (200, 60, 16)],
)
def test_the_panels_fill_the_screen_exactly(width: int, height: int, gpus: int) -> None:
    box = layout(width, height, gpus, findings=9, host=True, critical=2)
    assert _rows(box) == height - 2 - (1 if box.host else 0)
    for panel in (box.gpus, box.detail, box.advisor, box.procs):
        assert panel.height >= 3 and panel.width > 0
    if not box.stacked:
        assert box.gpus.width + box.detail.width == width
    if not box.bottom_stacked:
        assert box.advisor.width + box.procs.width == width


@pytest.mark.parametrize(
    ("width", "height", "gpus", "host"),
    [(80, 24, 8, True), (100, 30, 16, True), (120, 40, 8, True), (160, 50, 8, False)],
)
def test_the_places_tile_the_rows_between_header_and_footer(
    width: int, height: int, gpus: int, host: bool
) -> None:
    """Each cell from the row under the header to the row above the footer belongs to
    exactly one panel (the host line included); the overview alone covers the same."""
    laid = layout(width, height, gpus, findings=3, host=host, critical=1)
    where = places(laid)
    owner: dict[tuple[int, int], str] = {}
    for name, place in where.items():
        if name == "overview":
            continue
        for y in range(place.y, place.y + place.box.height):
            for x in range(place.x, place.x + place.box.width):
                assert (x, y) not in owner, f"{name} overlaps {owner[(x, y)]} at {x},{y}"
                owner[(x, y)] = name
    cells = {(x, y) for y in range(1, height - 1) for x in range(width)}
    assert set(owner) == cells
    assert ("host" in where) is laid.host
    overview = where["overview"]
    covered = {
        (x, y)
        for y in range(overview.y, overview.y + overview.box.height)
        for x in range(overview.box.width)
    }
    assert covered == {(x, y) for x, y in cells if y >= 1 + laid.host}


def test_eight_gpus_fit_80x24_one_line_each() -> None:
    box = layout(80, 24, 8, findings=9, host=True, critical=2)
    assert box.stacked
    assert box.gpus.inner[1] == 1 + 8  # column headers, then every GPU
    # the two critical findings and a line counting the rest
    assert box.advisor.inner[1] >= 3
    assert box.procs.inner[1] >= 2  # the column headers and a process


def test_the_host_line_gives_way_when_the_gpus_would_not_fit() -> None:
    assert not layout(80, 24, 8, findings=9, host=True, critical=2).host
    assert layout(80, 24, 4, findings=0, host=True).host
    assert layout(160, 50, 8, findings=0, host=True).host
    assert not layout(160, 50, 8, findings=0, host=False).host  # remote: no host readings


def test_sixteen_gpus_at_100x30_keep_the_other_panels_visible() -> None:
    box = layout(100, 30, 17, findings=18, host=True, critical=4)  # 16 GPUs + a node line
    assert box.gpus.inner[1] < 17 + 1  # cut: the list says so itself
    assert box.advisor.inner[1] >= 4 + 1  # every critical finding and the count line
    assert box.detail.height >= 5 and box.procs.height >= 3


def test_wide_terminals_sit_side_by_side() -> None:
    box = layout(160, 50, 8, findings=3, host=True)
    assert not box.stacked and not box.bottom_stacked
    mid = layout(120, 40, 8, findings=3, host=True)
    assert not mid.stacked and mid.bottom_stacked  # the process table gets the full width
    assert mid.procs.width == 120


def test_rows_the_process_table_cannot_use_go_to_the_advisor() -> None:
    few = layout(120, 40, 8, findings=9, host=True, processes=1)
    many = layout(120, 40, 8, findings=9, host=True, processes=12)
    assert few.advisor.height > many.advisor.height
    assert many.procs.inner[1] >= 12 // 2


def test_a_tiny_terminal_still_gives_every_panel_a_size() -> None:
    box = layout(20, 5, 8, findings=1, host=True)
    for panel in (box.gpus, box.detail, box.advisor, box.procs, box.overview):
        assert panel.height >= 0 and panel.width >= 0
