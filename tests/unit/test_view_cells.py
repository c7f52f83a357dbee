"""The view model's vocabulary: fitting a row to a width, wrapping, and saying what a cut
hides."""

from __future__ import annotations

from gputui.view.cells import Cell, Role, cut, fit, more_row, plural, wrap


def _text(cells: tuple[Cell, ...]) -> str:
    return "".join(c.text for c in cells)


def test_a_row_that_fits_is_unchanged() -> None:
    cells = (Cell("GPU 3 "), Cell("97 %", Role.OK))
    assert fit(cells, 40) == cells


def test_cells_go_by_priority_highest_first_before_anything_is_cut() -> None:
    cells = (
        Cell("Util ", bold=True),
        Cell("97 %"),
        Cell("  mem ctrl 41 %", Role.DIM, drop=1),
        Cell("  fan 60 %", Role.DIM, drop=2),
    )
    fitted = fit(cells, 24)
    assert _text(fitted) == "Util 97 %  mem ctrl 41 %"  # the fan (drop 2) went first
    assert _text(fit(cells, 12)) == "Util 97 %"  # then the memory controller


def test_the_flexible_cell_is_shortened_with_an_ellipsis() -> None:
    cells = (Cell("  2100 "), Cell("python train.py --model llama-3-8b", flex=True), Cell(" 12"))
    fitted = _text(fit(cells, 24))
    assert len(fitted) == 24
    assert "…" in fitted and fitted.endswith(" 12")


def test_without_a_flexible_cell_the_end_is_cut_with_an_ellipsis() -> None:
    fitted = _text(fit((Cell("abcdef"), Cell("ghijkl")), 8))
    assert fitted == "abcdefg…"
    # a cut falling exactly between two cells still shows that something was cut
    assert _text(fit((Cell("abcd"), Cell("efgh")), 4)) == "abc…"


def test_cut_and_plural() -> None:
    assert cut("H100 80GB HBM3", 8) == "H100 80…"
    assert cut("short", 8) == "short"
    assert plural(1, "GPU") == "1 GPU" and plural(4, "GPU") == "4 GPUs"
    assert plural(2, "process") == "2 processes"


def test_wrap_keeps_a_hanging_indent_and_no_trailing_space() -> None:
    text = "Check the server's airflow and fan curve; nothing may block the GPU's intake"
    lines = wrap(text, 30, "    ", "  → ")
    assert lines[0].startswith("  → Check")
    assert all(line.startswith("    ") for line in lines[1:])
    assert all(len(line) <= 30 and line == line.rstrip() for line in lines)
    assert " ".join(line.strip().removeprefix("→ ") for line in lines) == text


def test_more_row_says_what_it_hides() -> None:
    row = more_row(4, "GPU", arrow="↓")
    assert row.plain == "+4 GPUs ↓" and row.cells[0].role is Role.DIM
    critical = more_row(3, "finding", critical=1)
    assert critical.plain == "+3 findings, 1 critical" and critical.cells[0].role is Role.CRIT
