"""The footer's row (gputui/view/footer.py): keys in order while they fit, the palette's key
against the right edge, a disabled key dimmed, and where each key can be clicked."""

from __future__ import annotations

from gputui.view.cells import KeysKey, Role
from gputui.view.footer import KeyHint, footer_row

HINTS = [
    KeyHint("question_mark", "?", "help"),
    KeyHint("q", "q", "quit"),
    KeyHint("left", "←", "prev GPU"),
    KeyHint("o", "o", "overview", enabled=False),
]
PALETTE = KeyHint("ctrl+p", "^p", "palette")


def _spans(width: int) -> tuple[tuple[int, int, str], ...]:
    key = footer_row(HINTS, PALETTE, width).key
    assert isinstance(key, KeysKey)
    return key.spans


def test_every_key_fits_and_the_palette_sits_at_the_right_edge() -> None:
    row = footer_row(HINTS, PALETTE, 80)
    assert row.plain == " ? help  q quit  ← prev GPU  o overview " + " " * 28 + "▏^p palette "
    assert len(row.plain) == 80


def test_keys_drop_from_the_right_and_the_palette_stays() -> None:
    row = footer_row(HINTS, PALETTE, 36)
    assert row.plain.startswith(" ? help  q quit ")
    assert "prev GPU" not in row.plain and row.plain.endswith("▏^p palette ")
    assert len(row.plain) == 36


def test_a_footer_narrower_than_the_palettes_key_shows_the_keys_that_fit() -> None:
    assert footer_row(HINTS, PALETTE, 10).plain == " ? help "
    assert footer_row([], None, 30).plain == ""


def test_each_key_is_clicked_where_it_is_drawn_and_the_gap_is_no_key() -> None:
    spans = _spans(80)
    assert [s[2] for s in spans] == ["question_mark", "q", "left", "o", "ctrl+p"]
    key = KeysKey(spans)
    assert key.key_at(1) == "question_mark" and key.key_at(9) == "q"
    assert key.key_at(50) is None  # the gap before the palette's key
    assert key.key_at(79) == "ctrl+p"


def test_a_disabled_key_is_dimmed_and_ascii_sets_off_the_palette_with_a_bar() -> None:
    row = footer_row(HINTS, PALETTE, 80, ascii=True)
    overview = [c for c in row.cells if c.text in (" o ", "overview ")]
    assert overview and all(c.role is Role.DIM for c in overview)
    assert "|" in row.plain and "▏" not in row.plain
