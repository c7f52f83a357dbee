"""A long GPU list from the keyboard (a keyboard user's pass over 64 GPUs): Home and End,
PgUp and PgDn a page of the list's rows, two digits typed quickly for GPU 10 and up, and
PgUp PgDn still paging the process table right after a move in it."""

from __future__ import annotations

from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.view.navigation import DIGITS_WITHIN_S
from tests.conftest import DemoApp


def gpu_rows(app: GpuTuiApp) -> list[str]:
    """The GPU list's lines as drawn, past its column headers."""
    return app.query_one("#gpus", LineView).plain.splitlines()[1:]


def footer(app: GpuTuiApp) -> str:
    return app.query_one("#footer", LineView).plain


async def test_home_end_and_a_page_of_the_rows_the_list_shows(demo_app: DemoApp) -> None:
    app = demo_app(None, 64)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = sum(1 for line in gpu_rows(app) if line[1:3].strip().isdigit())
        assert 3 < shown < 64  # the list is cut: 64 GPUs do not fit in 40 rows
        await pilot.press("end")
        await pilot.pause()
        assert app.selected == 63
        assert any(line.startswith("▶63") for line in gpu_rows(app))
        await pilot.press("home")
        await pilot.pause()
        assert app.selected == 0
        await pilot.press("pagedown")
        await pilot.pause()
        page = app.selected
        # a page: the rows the list shows between its markers, the last one left in view
        assert 0 < page < shown and page >= shown - 2
        assert any(line.startswith(f"▶{page:>2}") for line in gpu_rows(app))
        await pilot.press("pagedown", "pagedown")
        await pilot.pause()
        assert app.selected == 3 * page
        await pilot.press("pageup")
        assert app.selected == 2 * page
        for _ in range(20):  # stops at the ends, no wrapping round
            await pilot.press("pagedown")
        assert app.selected == 63
        for _ in range(20):
            await pilot.press("pageup")
        assert app.selected == 0


async def test_two_digits_typed_quickly_reach_gpu_ten_and_up(demo_app: DemoApp) -> None:
    app = demo_app(None, 64)
    async with app.run_test(size=(120, 40)) as pilot:
        now = [1000.0]
        app.main.navigation.clock = lambda: now[0]
        await pilot.press("1", "2")
        await pilot.pause()
        assert app.selected == 12
        assert any(line.startswith("▶12") for line in gpu_rows(app))
        await pilot.press("6", "3")
        assert app.selected == 63
        await pilot.press("7", "0")  # there is no GPU 70: each digit a GPU of its own
        assert app.selected == 0
        await pilot.press("4")
        now[0] += DIGITS_WITHIN_S + 0.1  # too late to add to the 4
        await pilot.press("2")
        assert app.selected == 2
        await pilot.press("0", "5")  # no GPU 05: GPU 0, then GPU 5
        assert app.selected == 5


async def test_a_node_of_ten_gpus_or_fewer_takes_each_digit_at_once(demo_app: DemoApp) -> None:
    app = demo_app(None, 10)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        assert app.selected == 1
        await pilot.press("2")  # quickly after the 1, and there is no GPU 12
        assert app.selected == 2
        await pilot.press("1", "0")
        assert app.selected == 0
        await pilot.press("end")
        assert app.selected == 9


async def test_page_keys_follow_the_list_moved_in_last_and_the_footer_says_so(
    demo_app: DemoApp,
) -> None:
    """PgUp PgDn page the GPUs while the list hides some (the footer offers PgDn then);
    right after ↓ ↑ in the process table they page the processes, as they always did."""
    app = demo_app(None, 64)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "PgDn more GPUs" in footer(app)
        await pilot.press("v", "down")  # every GPU's processes; into the table
        await pilot.pause()
        first = app.choices.procs.pid
        assert first is not None and "PgDn" not in footer(app)
        await pilot.press("pagedown")
        await pilot.pause()
        assert app.selected == 0 and app.choices.procs.pid != first
        await pilot.press("right")  # back to the GPU list: PgDn pages GPUs again
        await pilot.pause()
        assert "PgDn more GPUs" in footer(app)
        await pilot.press("pagedown")
        assert app.selected > 1


async def test_page_keys_page_the_processes_where_every_gpu_fits(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "PgDn" not in footer(app)
        await pilot.press("pagedown")
        await pilot.pause()
        assert app.selected == 0 and app.choices.procs.pid is not None
