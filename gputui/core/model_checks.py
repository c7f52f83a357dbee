"""Checks every model object gets where it is built: its outside text cleaned (by the
resolved types of its fields) and its plain readings kept to what they can be."""

from __future__ import annotations

import dataclasses
import enum
import math
import operator
import types
import typing
from collections.abc import Callable

from gputui.core.sanitize import MAX_TEXT, clean


def clean_text_fields(obj: object) -> None:
    """Every string of a model object (and every string in its tuples) made safe once,
    where it is built: from NVML, psutil, a remote page or a replay file alike
    (gputui.core.sanitize). Fields added later are covered without being named here."""
    if _all_plain(obj):
        return
    for name in _text_fields(type(obj)):
        value = getattr(obj, name)
        if isinstance(value, str):
            cleaned: object = clean(value)
        elif isinstance(value, tuple) and any(isinstance(v, str) for v in value):
            cleaned = tuple(clean(v) if isinstance(v, str) else v for v in value)
        else:
            continue
        if cleaned != value:
            object.__setattr__(obj, name, cleaned)


_TEXT_FIELDS: dict[type, tuple[str, ...]] = {}
#: per class, its text fields' values in one call (a tuple of them, whatever their number)
_TEXT_GETTERS: dict[type, Callable[[object], tuple[object, ...]]] = {}


def _plain(text: str) -> bool:
    """Printable ASCII within ``MAX_TEXT``: a text ``clean`` leaves as it is."""
    return text.isascii() and text.isprintable() and len(text) <= MAX_TEXT


def _all_plain(obj: object) -> bool:
    """Whether every text of ``obj`` is one ``clean`` would leave as it is, told cheaply:
    printable ASCII (no control character, no DEL) within ``MAX_TEXT``. Most text is, and
    a model object's texts are checked each time one is built (a week's report builds
    millions of them); anything else goes through ``clean``."""
    cls = type(obj)
    getter = _TEXT_GETTERS.get(cls)
    if getter is None:
        names = _text_fields(cls)
        get = operator.attrgetter(*names) if names else (lambda _obj: ())
        getter = _TEXT_GETTERS[cls] = (
            get if len(names) != 1 else (lambda o: (get(o),))  # one name: not a tuple
        )
    values = getter(obj)
    try:
        if values in _PLAIN:
            return True
    except TypeError:  # something unhashable where a text belongs: the full path
        return False
    size = 0  # characters: only records with short texts are remembered
    for value in values:
        if value is None:
            continue
        if value.__class__ is str:
            if not _plain(value):
                return False
            size += len(value)
        elif value.__class__ is tuple:
            for item in value:
                if item.__class__ is str:
                    if not _plain(item):
                        return False
                    size += len(item)
                elif isinstance(item, str):
                    return False  # a str subclass: the full path
        else:
            return False
    if size <= _PLAIN_CHARS:
        if len(_PLAIN) >= _PLAIN_MOST:
            _PLAIN.clear()
        _PLAIN.add(values)
    return True


#: texts found plain before, as a record's tuple of them: a record built again and again
#: (a process, tick after tick) has the same ones, and a tuple of texts equal to a plain
#: one is plain (str's own equality: the same characters). Only exact ``str`` (and tuples
#: of them) are let in by ``_all_plain``. Bounded: at most ``_PLAIN_MOST`` records of at
#: most ``_PLAIN_CHARS`` characters each (a few MB however long a host's command lines).
_PLAIN: set[tuple[object, ...]] = set()
_PLAIN_MOST = 1024
_PLAIN_CHARS = 4096


def _reading(value: object, ceiling: float = math.inf) -> float | None:
    """A number that can only be finite, >= 0 and at most ``ceiling`` (a time, a share):
    as a float, or None for anything else (NaN, infinity, negative, not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= ceiling else None


def clean_readings(obj: object, **ceilings: float) -> None:
    """Each named number field of ``obj`` checked by ``_reading``, set to None if it fails."""
    for name, ceiling in ceilings.items():
        value = getattr(obj, name)
        if value is not None:
            checked = _reading(value, ceiling)
            if checked != value or type(checked) is not type(value):
                object.__setattr__(obj, name, checked)


def _text_fields(cls: type) -> tuple[str, ...]:
    """The fields whose resolved type can hold outside text: ``str``, an optional one, or a
    tuple of them (an enum's members are gputui's own). Resolved once per class from the
    real types, not their spelling."""
    names = _TEXT_FIELDS.get(cls)
    if names is None:
        hints = typing.get_type_hints(cls)
        names = _TEXT_FIELDS[cls] = tuple(
            f.name for f in dataclasses.fields(cls) if _holds_text(hints[f.name])
        )
    return names


def _holds_text(tp: object) -> bool:
    if isinstance(tp, type):
        return issubclass(tp, str) and not issubclass(tp, enum.Enum)
    origin = typing.get_origin(tp)
    if origin is typing.Final:
        return _holds_text(typing.get_args(tp)[0])
    if origin is tuple or origin is typing.Union or origin is types.UnionType:
        return any(_holds_text(arg) for arg in typing.get_args(tp) if arg is not Ellipsis)
    return False
