"""``frozen``: a frozen, slotted dataclass whose equality, hash and repr are shared code.

``dataclasses`` writes and compiles every class's own ``__eq__``, ``__hash__`` and
``__repr__`` (besides ``__init__``, ``__setattr__`` and ``__delattr__``): some 2-3 KB of code
a class, ~0.4 MB for the record types a running gputui holds (issue 30). These three need no
code of their own: they read the fields through one ``attrgetter`` made once a class. They
behave as dataclasses' do: equal only to an instance of the same class whose compared
fields are equal, hashed on those fields, shown as ``Name(field=value, ...)``.

Nor do ``__setattr__`` and ``__delattr__``: a frozen dataclass compiles both for every class
(two of its three ``exec`` calls, ~40 % of making a class, and gputui makes some 60 record
classes before its first frame), where one shared pair raises ``FrozenInstanceError`` alike.
The class is made as an ordinary slotted dataclass without an ``__init__``; the one this
module compiles sets the fields as a frozen dataclass's does (``object.__setattr__``), then
calls ``__post_init__``. It is compiled only once a class has been built
``COMPILED_AFTER`` times (or called wrongly): until then one shared ``__init__`` binds the
arguments to the fields by their names, so a class built a few times is never compiled.
``fields``, ``replace``, ``asdict``, pickling and copying work as on any dataclass.

``record`` is the same for a mutable record (``@dataclass(slots=True)``, unhashable as
dataclasses make it, or hashed on its fields with ``hashable=True`` as ``unsafe_hash``
does): ``dataclasses`` compiles its ``__init__``, ``__repr__``, ``__eq__`` (and
``__hash__``) at once, ~1.8 ms for a 50-field reading before the first frame.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # for type checkers only: no dependency at run time

    def dataclass_transform(**_kwargs: object) -> Callable[[T], T]:
        return lambda decorated: decorated


T = TypeVar("T")


def _getter(names: list[str]) -> Callable[[Any], Any]:
    if not names:
        return lambda _record: ()
    return attrgetter(*names)


def _eq(self: Any, other: Any) -> Any:  # a bool, or NotImplemented for another class
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = self._record_compared
    return compared(self) == compared(other)


def _hash(self: Any) -> int:
    return hash(self._record_compared(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._record_shown)
    return f"{type(self).__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)


class _Factory:
    """Stands for "not given" where a field's default comes from its factory."""


_FACTORY = _Factory()


def _init(cls: type, every: tuple[Field[Any], ...], settable: bool) -> Callable[..., None]:
    """The ``__init__`` a dataclass would have: each field set (through
    ``object.__setattr__`` unless ``settable``), defaults and factories as declared, then
    ``__post_init__``."""
    names: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    params: list[str] = []
    body: list[str] = []
    for f in every:
        name = f.name
        value = name  # what the field is set to: the argument as given
        fallback: str | None = None  # what it takes when not given
        param = name
        if f.default is not MISSING:
            names[f"_d_{name}"] = f.default
            fallback = f"_d_{name}"
            param = f"{name}={fallback}"
        elif f.default_factory is not MISSING:
            names[f"_f_{name}"] = f.default_factory
            fallback = f"_f_{name}()"
            param = f"{name}=_FACTORY"
            value = f"{fallback} if {name} is _FACTORY else {name}"
        if f.init:
            params.append(param)
        elif fallback is not None:
            value = fallback
        else:
            continue  # no value and not an argument: unset, as dataclasses leave it
        body.append(f"self.{name} = {value}" if settable else f"_set(self, {name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    made: dict[str, Any] = {}
    exec(source, names, made)  # the source is built above, from the fields' own names
    init: Callable[..., None] = made["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


#: instances a class is built by the binding ``__init__`` before its own is compiled
COMPILED_AFTER = 16


def _first_init(cls: type, every: tuple[Field[Any], ...], settable: bool) -> Callable[..., None]:
    """An ``__init__`` that binds the arguments to the fields itself for a class's first
    ``COMPILED_AFTER`` instances, then compiles the real one (``_init``) and puts it in its
    place. Compiling costs ~25 us a field (1.5 ms for the thresholds' 107), and most record
    classes are built a few times before the first frame (the GPUs' facts, the thresholds)
    or never again. Binding costs ~3x a compiled call (2.6 against 0.9 us for 8 fields):
    the classes built every tick (once, or once a GPU) pass the count within 16 s. A call
    it does not take as plainly right (a missing, unknown or repeated argument) compiles
    the real one at once, which answers it as dataclasses' would."""
    params: list[tuple[str, Any, Any]] = []  # name, default, factory (MISSING: none)
    later: list[tuple[str, Any, Any]] = []  # fields outside the signature that get a value
    for f in every:
        entry = (f.name, f.default, f.default_factory)
        if f.init:
            params.append(entry)
        elif f.default is not MISSING or f.default_factory is not MISSING:
            later.append(entry)
    accepted = frozenset(name for name, _, _ in params)
    required = tuple(
        (i, name)
        for i, (name, default, factory) in enumerate(params)
        if default is MISSING and factory is MISSING
    )
    post_init = hasattr(cls, "__post_init__")
    put = setattr if settable else object.__setattr__
    built = 0

    def compiled(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        init = _init(cls, every, settable)
        setattr(cls, "__init__", init)  # noqa: B010
        init(self, *args, **kwargs)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal built
        built += 1
        given = len(args)
        if (
            built > COMPILED_AFTER
            or given > len(params)
            or not accepted.issuperset(kwargs)
            or any(name in kwargs for name, _, _ in params[:given])  # given twice
            or any(i >= given and name not in kwargs for i, name in required)  # missing
        ):
            compiled(self, args, kwargs)
            return
        for (name, _, _), value in zip(params, args, strict=False):
            put(self, name, value)
        for name, default, factory in params[given:]:
            if name in kwargs:
                put(self, name, kwargs[name])
            else:
                put(self, name, default if default is not MISSING else factory())
        for name, default, factory in later:
            put(self, name, default if default is not MISSING else factory())
        if post_init:
            self.__post_init__()

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, slots=True)``, with the shared ``==``, hash and repr."""
    for name in ("__setattr__", "__delattr__"):  # as dataclasses refuse for frozen ones
        if name in cls.__dict__:
            raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    made = _made(cls, settable=False)
    setattr(made, "__setattr__", _frozen_setattr)  # noqa: B010
    setattr(made, "__delattr__", _frozen_delattr)  # noqa: B010
    setattr(made, "__getstate__", _getstate)  # noqa: B010
    setattr(made, "__setstate__", _setstate)  # noqa: B010
    setattr(made, "__hash__", _hash)  # noqa: B010
    return made


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, hashable: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform()
def record(cls: type[T] | None = None, /, *, hashable: bool = False) -> Any:
    """``@dataclass(slots=True)`` (``unsafe_hash=True`` with ``hashable``), with the shared
    ``==``, repr (and hash)."""

    def make(cls: type[T]) -> type[T]:
        made = _made(cls, settable=True)
        # as dataclasses: a mutable class with == is unhashable unless asked otherwise
        setattr(made, "__hash__", _hash if hashable else None)  # noqa: B010
        return made

    return make if cls is None else make(cls)


def _made(cls: type[T], settable: bool) -> type[T]:
    """The slotted dataclass of ``cls`` with the shared ``==`` and repr; its ``__init__``
    compiled once it has been built often enough (``_first_init``)."""
    if not cls.__dict__.get("__doc__"):
        # dataclasses would write "Name(signature)" here, asking inspect for the signature
        # of a class whose __init__ comes later: a tokenizer pass over object's signature
        # for each such class, and the tokenizer's large regex compiled at the first one.
        cls.__doc__ = f"{cls.__name__}({', '.join(inspect.get_annotations(cls))})"
    made = dataclass(slots=True, init=False, eq=False, repr=False)(cls)
    every = fields(made)  # type: ignore[arg-type]
    if "__init__" not in cls.__dict__:  # a class's own __init__ stays, as with dataclasses
        setattr(made, "__init__", _first_init(made, every, settable))  # noqa: B010
    compared = staticmethod(_getter([f.name for f in every if f.compare]))
    setattr(made, "_record_compared", compared)  # noqa: B010
    setattr(made, "_record_shown", tuple(f.name for f in every if f.repr))  # noqa: B010
    setattr(made, "__eq__", _eq)  # noqa: B010
    setattr(made, "__repr__", _repr)  # noqa: B010
    return made
