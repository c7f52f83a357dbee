"""Key names answered without unicodedata's name tables.

Textual names keys after the Unicode names of their characters ('question_mark' is '?')
and asks ``unicodedata`` for them whenever it works out which bindings a key may reach
(once a key, cached). The first such lookup pages in about 0.8 MB of the name database,
a fifth of what gputui holds beyond a bare Textual app, for a few dozen names that never
change. ``KeyNames`` answers those names from the tables below and hands anything else
to ``unicodedata`` itself; tests/unit/test_keynames.py checks every entry against
``unicodedata`` and that every key gputui and Textual bind is answered here.
"""

from __future__ import annotations

import string
from types import ModuleType
from typing import Any, Final

_PUNCTUATION: Final = " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
_PUNCTUATION_NAMES: Final = (
    "SPACE",
    "EXCLAMATION MARK",
    "QUOTATION MARK",
    "NUMBER SIGN",
    "DOLLAR SIGN",
    "PERCENT SIGN",
    "AMPERSAND",
    "APOSTROPHE",
    "LEFT PARENTHESIS",
    "RIGHT PARENTHESIS",
    "ASTERISK",
    "PLUS SIGN",
    "COMMA",
    "HYPHEN-MINUS",
    "FULL STOP",
    "SOLIDUS",
    "COLON",
    "SEMICOLON",
    "LESS-THAN SIGN",
    "EQUALS SIGN",
    "GREATER-THAN SIGN",
    "QUESTION MARK",
    "COMMERCIAL AT",
    "LEFT SQUARE BRACKET",
    "REVERSE SOLIDUS",
    "RIGHT SQUARE BRACKET",
    "CIRCUMFLEX ACCENT",
    "LOW LINE",
    "GRAVE ACCENT",
    "LEFT CURLY BRACKET",
    "VERTICAL LINE",
    "RIGHT CURLY BRACKET",
    "TILDE",
)

#: each printable ASCII symbol's Unicode name (what ``unicodedata.name`` answers)
NAMES: Final[dict[str, str]] = dict(zip(_PUNCTUATION, _PUNCTUATION_NAMES, strict=True))

#: upper-cased name -> character: the symbols', and the aliases of the control keys
CHARACTERS: Final[dict[str, str]] = {
    **{name: char for char, name in NAMES.items()},
    "BACKSPACE": "\x08",
    "DELETE": "\x7f",
    "ESCAPE": "\x1b",
    "TAB": "\t",
}

#: upper-cased names Textual asks for that name no character (unicodedata: KeyError)
NO_CHARACTER: Final[frozenset[str]] = frozenset(
    {
        *("<ANY>", "<IGNORE>", "<SCROLL-DOWN>", "<SCROLL-UP>", "CTRL-AT"),
        *("AT", "BACKSLASH", "MINUS", "PLUS", "SLASH", "UNDERSCORE"),
        *("GREATER THAN SIGN", "LESS THAN SIGN", "HYPHEN MINUS"),
        *("UP", "DOWN", "LEFT", "RIGHT", "HOME", "END", "INSERT", "PAGEUP", "PAGEDOWN"),
        *("ENTER", "RETURN"),
        *(f"F{n}" for n in range(1, 25)),
        *string.ascii_uppercase,  # the footer's letter and digit keys: no such names
        *string.digits,
    }
)


class KeyNames:
    """``unicodedata`` as Textual's key handling uses it, with the names above at hand."""

    def __init__(self, module: ModuleType) -> None:
        self._module = module

    def lookup(self, name: str) -> str:
        key = name.upper()  # unicodedata.lookup ignores case
        found = CHARACTERS.get(key)
        if found is not None:
            return found
        if key in NO_CHARACTER:
            raise KeyError(f"undefined character name '{name}'")
        answer: str = self._module.lookup(name)
        return answer

    def name(self, char: str, *default: str) -> str:
        found = NAMES.get(char)
        if found is not None:
            return found
        answer: str = self._module.name(char, *default)
        return answer

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._module, attr)
