"""``frozen`` (gputui/core/records.py) behaves as ``@dataclass(frozen=True, slots=True)``:
equality, hash, repr, immutability, replace, pickling and match arguments."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import field

import pytest

from gputui.core.records import frozen


@frozen
class Point:
    x: int
    y: float = 0.0
    note: str = field(default="", compare=False, repr=False)


@frozen
class Other:
    x: int
    y: float = 0.0


@frozen
class Empty:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    x: int
    y: float = 0.0


def test_equal_by_the_compared_fields_of_the_same_class_only() -> None:
    assert Point(1, 2.0) == Point(1, 2.0, note="else")
    assert Point(1, 2.0) != Point(1, 3.0)
    point: object = Point(1, 2.0)
    assert point != Other(1, 2.0)
    assert point != (1, 2.0)
    assert Empty() == Empty()
    assert Point(1, float("nan")) != Point(1, float("nan"))  # as dataclasses': tuples'
    nan = float("nan")
    assert Point(1, nan) == Point(1, nan) and Plain(1, nan) == Plain(1, nan)


def test_hashes_follow_equality() -> None:
    assert hash(Point(1, 2.0)) == hash(Point(1, 2.0, note="else"))
    assert len({Point(1, 2.0), Point(1, 2.0), Point(2, 2.0)}) == 2
    assert hash(Empty()) == hash(Empty())


def test_repr_is_the_dataclass_repr() -> None:
    assert repr(Point(1, 2.5, note="hidden")) == "Point(x=1, y=2.5)"
    assert repr(Other(1, 2.5)) == repr(Plain(1, 2.5)).replace("Plain", "Other")
    assert repr(Empty()) == "Empty()"


def test_still_a_frozen_slotted_dataclass() -> None:
    point = Point(1, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3  # type: ignore[misc]
    assert not hasattr(point, "__dict__")
    assert dataclasses.replace(point, x=5) == Point(5, 2.0)
    assert pickle.loads(pickle.dumps(point)) == point
    assert Point.__match_args__ == ("x", "y", "note")
    match point:
        case Point(1, y):
            assert y == 2.0
        case _:
            pytest.fail("no match")
