"""Fixed-size ring buffers of numbers that share one cursor: the history's columns (one
value a frame each, so their positions never differ) and a GPU process's own readings.

Memory grows with what is held (``array`` of float32, NaN for "no reading"), doubling up
to the ring's capacity, and never past it.
"""

from __future__ import annotations

from array import array
from typing import Final

NAN: Final = float("nan")
#: slots a ring starts with; it doubles as the history fills, up to its capacity
INITIAL_SLOTS: Final = 64


class Cursor:
    """Where a ring's oldest value is and how many it holds. Every ring of a History
    shares one: they all take one value per frame, so their positions never differ."""

    __slots__ = ("_rings", "allocated", "capacity", "size", "start")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self.start = 0
        self.size = 0
        self.allocated = min(capacity, INITIAL_SLOTS)  # every ring's length, alike
        self._rings: list[Ring] = []

    def reserve(self, slots: int) -> None:
        """Every ring at least ``slots`` long (at most the capacity), grown in place: the
        arrays keep their identity, so the columns History holds stay valid."""
        want = min(self.capacity, slots)
        if want <= self.allocated:
            return
        grow = want - self.allocated
        for ring in self._rings:
            ring.data.extend(array(ring.data.typecode, [ring._fill]) * grow)
        self.allocated = want

    def advance(self) -> int:
        """The slot the next value goes to (the oldest one once full)."""
        if self.size < self.capacity:
            slot = self.size  # the start stays 0 until the ring is full
            if slot >= self.allocated:
                self.reserve(2 * self.allocated)
            self.size += 1
            return slot
        slot = self.start
        self.start = (slot + 1) % self.capacity
        return slot


class Ring:
    """A fixed-capacity ring of numbers; the oldest value is overwritten first."""

    __slots__ = ("_fill", "cursor", "data")

    def __init__(
        self, capacity: int, typecode: str = "f", fill: float = NAN, cursor: Cursor | None = None
    ) -> None:
        #: the cursor it shares (its own, where none is given)
        self.cursor = Cursor(capacity) if cursor is None else cursor
        self._fill = fill
        #: the values by slot (``cursor.start`` is the oldest's once full)
        self.data = array(typecode, [fill]) * self.cursor.allocated
        self.cursor._rings.append(self)

    @property
    def capacity(self) -> int:
        return self.cursor.capacity

    def __len__(self) -> int:
        return self.cursor.size

    def append(self, value: float) -> None:
        """For a ring with a cursor of its own: History moves its shared one, once a frame."""
        self.data[self.cursor.advance()] = value

    def __getitem__(self, i: int) -> float:
        """Logical index: 0 is the oldest value, -1 the newest."""
        cursor = self.cursor
        if i < 0:
            i += cursor.size
        if not 0 <= i < cursor.size:
            raise IndexError(i)
        return self.data[(cursor.start + i) % cursor.capacity]

    def tail(self, n: int | None = None) -> list[float]:
        """The newest ``n`` values (all when None), oldest first."""
        cursor = self.cursor
        size, capacity = cursor.size, cursor.capacity
        n = size if n is None else max(0, min(n, size))
        a = (cursor.start + size - n) % capacity
        if a + n <= capacity:
            return self.data[a : a + n].tolist()
        return self.data[a:].tolist() + self.data[: a + n - capacity].tolist()
