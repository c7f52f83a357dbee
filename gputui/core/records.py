"""``frozen``: a frozen, slotted dataclass whose equality, hash and repr are shared code.

``dataclasses`` writes and compiles every class's own ``__eq__``, ``__hash__`` and
``__repr__`` (besides ``__init__``, ``__setattr__`` and ``__delattr__``): some 2-3 KB of code
a class, ~0.4 MB for the record types a running gputui holds (issue 30). These three need no
code of their own: they read the fields through one ``attrgetter`` made once a class. They
behave as dataclasses' do: equal only to an instance of the same class whose compared
fields are equal, hashed on those fields, shown as ``Name(field=value, ...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

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


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, slots=True)``, with the shared ``==``, hash and repr."""
    made = dataclass(frozen=True, slots=True, eq=False, repr=False)(cls)
    every = fields(made)  # type: ignore[arg-type]
    compared = staticmethod(_getter([f.name for f in every if f.compare]))
    setattr(made, "_record_compared", compared)  # noqa: B010
    setattr(made, "_record_shown", tuple(f.name for f in every if f.repr))  # noqa: B010
    setattr(made, "__eq__", _eq)  # noqa: B010
    setattr(made, "__hash__", _hash)  # noqa: B010
    setattr(made, "__repr__", _repr)  # noqa: B010
    return made
