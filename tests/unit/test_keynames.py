"""gputui's table of key names (gputui/ui/keynames.py) says what unicodedata says, and
covers every key gputui and Textual bind, so that no lookup reaches the name database."""

from __future__ import annotations

import gc
import string
import unicodedata
from typing import Any

import pytest
import textual.keys
from textual.binding import Binding
from textual.keys import KEY_TO_UNICODE_NAME, Keys

import gputui.ui.app  # every screen's bindings exist
import gputui.ui.processes
import gputui.ui.screens  # noqa: F401
from gputui.ui import compat
from gputui.ui.keynames import CHARACTERS, NAMES, NO_CHARACTER, KeyNames


class _Noting:
    """``unicodedata`` for Textual's key functions: the real module, each name they look
    up noted."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def lookup(self, name: str) -> str:
        self.asked.add(name.upper())  # as unicodedata.lookup, case does not matter
        return unicodedata.lookup(name)

    def __getattr__(self, attr: str) -> Any:
        return getattr(unicodedata, attr)


def _looked_up(keys: set[str], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The names Textual's key functions ask unicodedata for, for bindings' keys: the
    footer's ``format_key`` and ``key_to_character``, each called past its cache."""
    noting = _Noting()
    monkeypatch.setattr(textual.keys, "unicodedata", noting)
    for key in keys:
        *_, name = key.strip().split("+")
        if "+" in key.strip() or not name:
            continue  # a key with a modifier names no character
        textual.keys.format_key.__wrapped__(name)
        textual.keys.key_to_character.__wrapped__(name)
    return noting.asked


def _bound_keys() -> set[str]:
    keys = {k.value for k in Keys} | set(KEY_TO_UNICODE_NAME)
    for thing in gc.get_objects():
        if isinstance(thing, Binding):
            keys.update(k for k in thing.key.split(",") if k.strip())
    return keys


def test_every_name_in_the_table_is_what_unicodedata_says() -> None:
    for name, char in CHARACTERS.items():
        assert unicodedata.lookup(name) == char, name
    for name in NO_CHARACTER:
        with pytest.raises(KeyError):
            unicodedata.lookup(name)
    for char, name in NAMES.items():
        assert unicodedata.name(char) == name


def test_every_bound_key_and_typed_symbol_is_answered_from_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _looked_up(_bound_keys(), monkeypatch)
    asked |= {unicodedata.name(c) for c in string.punctuation + " "}
    assert asked - CHARACTERS.keys() - NO_CHARACTER == set()
    assert set(string.punctuation + " ") <= NAMES.keys()


def test_the_stand_in_answers_as_unicodedata_in_any_case() -> None:
    names = KeyNames(unicodedata)
    for name in ["question_mark".replace("_", " "), "Tab", "escape", "SOLIDUS", "DEGREE SIGN"]:
        assert names.lookup(name) == unicodedata.lookup(name)
    for name in ["left", "PAGEUP", "F12", "NO SUCH NAME AT ALL"]:
        with pytest.raises(KeyError):
            names.lookup(name)
    assert names.name("?") == "QUESTION MARK"
    assert names.name("é") == unicodedata.name("é")
    assert names.name("\t", "none") == "none"
    assert names.category("a") == "Ll"  # anything else: the real module


def test_textual_keys_use_the_stand_in_unless_the_switch_is_on() -> None:
    stand_in = isinstance(getattr(textual.keys, "unicodedata", None), KeyNames)
    assert stand_in is (not compat.PUBLIC_ONLY)
    assert textual.keys.key_to_character("question_mark") == "?"
    assert textual.keys.key_to_character("left") is None
