"""``frozen`` (gputui/core/records.py) behaves as ``@dataclass(frozen=True, slots=True)``:
equality, hash, repr, immutability, replace, pickling and match arguments; ``record`` as
``@dataclass(slots=True)`` (``unsafe_hash=True`` with ``hashable``)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import field
from typing import Any

import pytest

from gputui.core.records import COMPILED_AFTER, frozen, record


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


@frozen
class Made:
    """Defaults from factories, a field set after the arguments, and a check after them."""

    name: str
    tags: list[str] = field(default_factory=list)
    count: int = field(default=0, init=False)
    seen: list[str] = field(default_factory=lambda: ["start"], init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.name.strip())


def test_init_as_a_frozen_dataclass_writes_it() -> None:
    # frozen compiles one __init__ a class and shares __setattr__ and __delattr__
    a, b = Made(" a "), Made("b", ["x"])
    assert (a.name, a.tags, a.count, a.seen) == ("a", [], 0, ["start"])
    assert b.tags == ["x"]
    assert a.tags is not Made("c").tags and a.seen is not Made("c").seen  # a new one each
    assert Made.__init__.__qualname__ == "Made.__init__"
    with pytest.raises(TypeError):
        Made()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Made("a", count=1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'name'"):
        del a.name
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        Point(1).x = 2  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(Made)] == ["name", "tags", "count", "seen"]
    assert dataclasses.asdict(b) == {"name": "b", "tags": ["x"], "count": 0, "seen": ["start"]}


def test_copies_and_pickles_keep_every_field() -> None:
    made = Made("a", ["x"])
    for copied in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert copied == made and copied.tags == ["x"] and copied.seen == ["start"]
    assert copy.deepcopy(made).tags is not made.tags


def test_a_class_keeps_its_own_init_and_may_not_bring_its_own_setattr() -> None:
    @frozen
    class Own:
        x: int

        def __init__(self, text: str) -> None:
            object.__setattr__(self, "x", int(text))

    assert Own("4").x == 4
    with pytest.raises(TypeError, match="__setattr__"):

        @frozen
        class Loose:
            x: int

            def __setattr__(self, name: str, value: object) -> None:
                object.__setattr__(self, name, value)


def test_init_is_compiled_after_enough_instances_or_a_wrong_call_and_says_the_same() -> None:
    @frozen
    class Late:
        x: int
        tags: list[str] = field(default_factory=list)

    first = Late.__init__
    assert first.__qualname__.endswith("Late.__init__")  # the binding one, until compiled
    for _ in range(COMPILED_AFTER):
        Late(1)
    assert Late.__init__ is first  # built COMPILED_AFTER times without compiling
    Late(2)
    made = Late.__init__
    assert made is not first  # compiled at the next
    assert Late(1, ["a"]) == Late(x=1, tags=["a"]) and Late(2).tags == []
    assert Late.__init__ is made  # and compiled once

    @frozen
    class Wrong:
        x: int

    binding = Wrong.__init__
    with pytest.raises(TypeError, match=r"Wrong.__init__\(\) missing 1 required positional"):
        Wrong()  # type: ignore[call-arg]
    assert Wrong.__init__ is not binding  # a wrong call compiles it: Python's own words

    class Child(Late):
        __slots__ = ()

    assert Child(3).x == 3  # a subclass without fields of its own shares it


@frozen
class Many:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=lambda: [1])
    d: int = field(default=4, init=False)
    e: list[str] = field(default_factory=list, init=False)
    f: float = 0.5

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", self.d + len(self.c))


@record
class ManyMutable:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)


CALLS: list[tuple[tuple[object, ...], dict[str, object]]] = [
    ((1,), {}),
    ((1, "x"), {}),
    ((1, "x", [2, 3], 0.25), {}),
    ((), {"a": 1}),
    ((1,), {"f": 2.0, "c": []}),
    ((), {"f": 2.0, "b": "y", "a": 7}),
    ((1, "x"), {"f": 1.0}),
]
WRONG: list[tuple[tuple[object, ...], dict[str, object]]] = [
    ((), {}),  # missing
    ((1, "x", [], 0.5, 9), {}),  # too many
    ((1,), {"a": 2}),  # twice
    ((1,), {"d": 2}),  # not an argument
    ((1,), {"z": 2}),  # unknown
    ((), {"b": "y"}),  # missing, with others given
]


@pytest.mark.parametrize("cls", [Many, ManyMutable])
def test_the_binding_init_builds_what_the_compiled_one_builds(cls: Any) -> None:
    calls = [c for c in CALLS if cls is Many or (set(c[1]) <= {"a", "b", "c"} and len(c[0]) <= 3)]

    def built() -> list[tuple[object, ...]]:
        rows = []
        for args, kwargs in calls:
            made = cls(*args, **kwargs)
            rows.append(tuple(getattr(made, f.name) for f in dataclasses.fields(made)))
        return rows

    binding = cls.__init__
    by_binding = built()
    assert cls.__init__ is binding
    for _ in range(COMPILED_AFTER):
        cls(1)
    assert cls.__init__ is not binding
    assert built() == by_binding
    first, second = cls(1), cls(1)
    assert first.c is not second.c  # a factory's value for each, compiled or not


@pytest.mark.parametrize(("args", "kwargs"), WRONG)
def test_a_wrong_call_fails_as_the_compiled_init_fails(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    @frozen
    class Fresh:
        a: int
        b: str = "b"
        c: list[int] = field(default_factory=lambda: [1])
        d: int = field(default=4, init=False)
        f: float = 0.5

    build: Any = Fresh  # called with what does not fit it, on purpose
    with pytest.raises(TypeError) as by_binding:
        build(*args, **kwargs)
    with pytest.raises(TypeError) as by_compiled:
        build(*args, **kwargs)
    assert str(by_binding.value) == str(by_compiled.value)
    assert "Fresh.__init__()" in str(by_compiled.value)


def test_a_class_without_a_docstring_is_made_without_asking_for_its_signature(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dataclasses writes a missing docstring from inspect.signature, which for a class
    whose __init__ comes later tokenizes object's signature (and compiles the tokenizer's
    regex the first time): a record names its fields itself."""
    import inspect

    asked: list[object] = []
    monkeypatch.setattr(inspect, "signature", lambda *args, **kwargs: asked.append(args))

    @frozen
    class Docless:
        x: int
        y: str = ""

    @frozen
    class Documented:
        """Its own words."""

        x: int

    assert asked == []
    assert Docless.__doc__ == "Docless(x, y)" and Documented.__doc__ == "Its own words."
    assert Docless(1) == Docless(1, "") and Docless(2).y == ""


@record
class Tally:
    name: str
    counts: list[int] = field(default_factory=list)
    total: int = 0
    note: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        self.total = sum(self.counts)


@record(hashable=True)
class Reading:
    index: int
    value: float | None = None


@dataclasses.dataclass(slots=True, unsafe_hash=True)
class PlainReading:
    index: int
    value: float | None = None


def test_a_mutable_record_is_a_slotted_dataclass_set_as_dataclasses_set_it() -> None:
    tally = Tally("a", [1, 2])
    assert tally.total == 3 and Tally("b").counts == []
    assert Tally("b").counts is not Tally("c").counts  # a factory's value for each
    tally.total = 7  # mutable
    assert tally.total == 7
    assert not hasattr(tally, "__dict__")  # slotted
    with pytest.raises(AttributeError):
        tally.other = 1  # type: ignore[attr-defined]
    assert Tally("a", [1]) == Tally("a", [1], note="else") != Tally("a", [2])
    assert repr(Tally("a", [1])) == "Tally(name='a', counts=[1], total=1)"
    assert [f.name for f in dataclasses.fields(Tally)] == ["name", "counts", "total", "note"]
    assert dataclasses.replace(Tally("a", [1]), name="b") == Tally("b", [1])
    assert dataclasses.asdict(Tally("a", [4])) == {
        "name": "a",
        "counts": [4],
        "total": 4,
        "note": "",
    }
    with pytest.raises(TypeError, match="unhashable"):
        hash(tally)  # as dataclasses leave a mutable class with ==


def test_a_hashable_record_hashes_and_compares_as_unsafe_hash_does() -> None:
    assert hash(Reading(1, 2.0)) == hash(Reading(1, 2.0)) != hash(Reading(2, 2.0))
    assert len({Reading(1), Reading(1), Reading(2)}) == 2
    assert repr(Reading(1, 2.5)) == repr(PlainReading(1, 2.5)).replace("PlainReading", "Reading")
    reading = Reading(1)
    reading.value = 3.0
    other: object = PlainReading(1, 3.0)
    assert reading == Reading(1, 3.0) and reading != other
    for copied in (copy.copy(reading), pickle.loads(pickle.dumps(reading))):
        assert copied == reading and copied is not reading
