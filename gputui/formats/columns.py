"""Typed columns for the version-3 recording: a field's values over a block's ticks as one
``array``, all of a block's columns in one compressed, base64 blob, and every value
checked as it comes out (per column where that is cheaper: a column whose least and
greatest values lie in the field's range is in range whole).

Codes: ``d`` a float (8 bytes), ``q`` an int (8), ``b`` a bool (1), ``D`` a tuple of
floats and ``I`` a tuple of ints (a 4-byte length a tick, then the values, 8 bytes each).
A column of a nullable field carries one byte a tick after its values (1: None).
Little-endian whatever the machine.
"""

from __future__ import annotations

import base64
import binascii
import math
import sys
import zlib
from array import array
from collections.abc import Sequence
from typing import Any, Final

from gputui.core.records import frozen
from gputui.formats.values import MAX_FLOAT, FormatError

#: a block's columns together may unpack to at most this many bytes, whatever it claims
MAX_BLOB_BYTES: Final = 64 * 1024 * 1024
_SIZE: Final = {"d": 8, "q": 8, "b": 1}
_TUPLES: Final = {"tuple[float, ...]": "D", "tuple[int, ...]": "I"}
_RAGGED: Final = {"D": "d", "I": "q"}  # a tuple column's values
_TYPECODE: Final = {"d": "d", "q": "q", "b": "b"}
_INT_LOW, _INT_HIGH = -(2**63), 2**63
_BIG_ENDIAN: Final = sys.byteorder == "big"


def code_of(kind: str) -> str:
    """The column code of a field's annotation (``float | None`` -> ``d``), ``""`` where
    the field is kept as changes (texts, records, nullable tuples)."""
    base = kind.replace(" | None", "").strip()
    if "None" not in kind and base in _TUPLES:
        return _TUPLES[base]
    return {"float": "d", "int": "q", "bool": "b"}.get(base, "")


@frozen
class Spec:
    """One column of a blob: whose (``part``), which field, its code, whether a null byte
    a tick follows, and for ``D`` how many floats it holds."""

    part: str
    field: str
    code: str
    nulls: bool
    count: int = 0

    def size(self, ticks: int) -> int:
        body = 4 * ticks + 8 * self.count if self.code in _RAGGED else _SIZE[self.code] * ticks
        return body + (ticks if self.nulls else 0)

    def as_json(self) -> list[Any]:
        return [self.part, self.field, self.code, int(self.nulls), self.count]


def parse_spec(data: Any) -> Spec:
    if not isinstance(data, list) or len(data) != 5:
        raise FormatError("a column is not [part, field, code, nulls, count]")
    part, field, code, nulls, count = data
    if not isinstance(part, str) or not isinstance(field, str) or len(part) + len(field) > 200:
        raise FormatError("a column's part and field must be short texts")
    if code not in ("d", "q", "b", "D", "I") or nulls not in (0, 1) or isinstance(nulls, bool):
        raise FormatError(f"column {field}: unknown code {code!r}")
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_BLOB_BYTES:
        raise FormatError(f"column {field}: count {count!r}")
    return Spec(part, field, code, bool(nulls), count)


class BlobWriter:
    """Collects a block's columns; ``put`` refuses (False) values its code cannot hold
    exactly, and the caller keeps that field as changes instead."""

    def __init__(self, ticks: int) -> None:
        self.ticks = ticks
        self.specs: list[Spec] = []
        self._parts: list[bytes] = []

    def put(self, part: str, field: str, code: str, values: Sequence[Any]) -> bool:
        packed = _pack(code, values)
        if packed is None:
            return False
        body, nulls, count = packed
        self.specs.append(Spec(part, field, code, nulls is not None, count))
        self._parts.append(body)
        if nulls is not None:
            self._parts.append(nulls)
        return True

    def blob(self) -> str:
        return base64.b64encode(zlib.compress(b"".join(self._parts), 6)).decode("ascii")


def _pack(code: str, values: Sequence[Any]) -> tuple[bytes, bytes | None, int] | None:
    if code in _RAGGED:
        return _pack_tuples(code, values)
    fill = next((v for v in values if v is not None), 0)
    nulls = bytes(v is None for v in values)
    if code == "b":
        if not all(v is None or type(v) is bool for v in values):
            return None
    elif code == "q":
        if not all(v is None or (type(v) is int and _INT_LOW <= v < _INT_HIGH) for v in values):
            return None
    else:
        if not all(v is None or type(v) in (int, float) for v in values):
            return None
        finite = [v if v is None or math.isfinite(v) else None for v in values]
        if any(v is not None and abs(v) >= MAX_FLOAT for v in finite):
            return None
        nulls = bytes(v is None for v in finite)
        fill = next((v for v in finite if v is not None), 0)
        values = finite
    column = array(_TYPECODE[code], [fill if v is None else v for v in values])
    return _bytes(column), nulls if any(nulls) else None, 0


def _pack_tuples(code: str, values: Sequence[Any]) -> tuple[bytes, None, int] | None:
    lengths = array("I")
    flat = array(_RAGGED[code])
    fits = _fits_float if code == "D" else _fits_int
    for value in values:
        value = () if value is None else value
        if not isinstance(value, tuple) or not all(fits(v) for v in value):
            return None
        lengths.append(len(value))
        flat.extend(value)
    return _bytes(lengths) + _bytes(flat), None, len(flat)


def _fits_float(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v) and abs(v) < MAX_FLOAT


def _fits_int(v: Any) -> bool:
    return type(v) is int and _INT_LOW <= v < _INT_HIGH


def _bytes(column: array[Any]) -> bytes:
    if _BIG_ENDIAN:
        column = array(column.typecode, column)
        column.byteswap()
    return column.tobytes()


def unpack_blob(text: Any, expected: int) -> memoryview:
    """The blob's bytes, exactly as long as its columns say (``expected``: their sizes'
    sum), never more than ``MAX_BLOB_BYTES`` unpacked, whatever the compressed stream
    holds."""
    if expected > MAX_BLOB_BYTES:
        raise FormatError(f"columns of {expected:,} bytes: more than a block may hold")
    if not isinstance(text, str):
        raise FormatError("the columns are not text")
    try:
        packed = base64.b64decode(text, validate=True)
        unpacker = zlib.decompressobj()
        raw = unpacker.decompress(packed, expected + 1)
    except (binascii.Error, ValueError, zlib.error) as exc:
        raise FormatError(f"the columns do not unpack ({exc})") from exc
    if len(raw) != expected or not unpacker.eof or unpacker.unconsumed_tail:
        raise FormatError(f"the columns unpack to other than the {expected:,} bytes they claim")
    return memoryview(raw)


def read_column(
    view: memoryview, spec: Spec, ticks: int, bounds: tuple[float, float] | None
) -> tuple[list[Any], bytes | None]:
    """One column's values (a list, one a tick) and its null bytes, checked: finite,
    within what a file may claim, and where ``bounds`` are given, a value outside them
    made None (as ``core.ranges`` makes a reading no GPU gives unknown)."""
    if spec.code in _RAGGED:
        return _read_tuples(view, spec, ticks, bounds), None
    size = _SIZE[spec.code] * ticks
    column = array(_TYPECODE[spec.code])
    column.frombytes(view[:size])
    if _BIG_ENDIAN:
        column.byteswap()
    nulls = bytes(view[size : size + ticks]) if spec.nulls else None
    low, high = (min(column), max(column)) if column else (0, 0)  # once, for every check
    if spec.code == "b":
        if low < 0 or high > 1:
            raise FormatError(f"column {spec.field}: a bool that is neither 0 nor 1")
        values: list[Any] = list(map(bool, column))  # 0 or 1: False or True
    else:
        values = _checked_numbers(column, spec, low, high)
    if nulls is not None:
        if max(nulls, default=0) > 1:
            raise FormatError(f"column {spec.field}: a null byte that is neither 0 nor 1")
        values = [None if z else v for v, z in zip(values, nulls, strict=True)]
    # the writer fills a null's place with a value of the column: the whole column within
    # bounds is the common case, checked in two C loops; the rest value by value
    if bounds is not None and column and not bounds[0] <= low <= high <= bounds[1]:
        values = _bounded(values, bounds)
    return values, nulls


def _checked_numbers(
    column: array[Any], spec: Spec, low: float | None = None, high: float | None = None
) -> list[Any]:
    """The column's values; a float column's all finite and within what a file may
    claim (``low``/``high``: its least and greatest, where known already)."""
    if spec.code == "d" and column:
        if not math.isfinite(sum(column)) and not all(math.isfinite(v) for v in column):
            raise FormatError(f"column {spec.field}: not a finite number")
        low = min(column) if low is None else low
        high = max(column) if high is None else high
        if low <= -MAX_FLOAT or high >= MAX_FLOAT:
            raise FormatError(f"column {spec.field}: not a finite number in range")
    return column.tolist()


def _bounded(values: list[Any], bounds: tuple[float, float]) -> list[Any]:
    low, high = bounds
    return [v if v is None or low <= v <= high else None for v in values]


def _read_tuples(
    view: memoryview, spec: Spec, ticks: int, bounds: tuple[float, float] | None
) -> list[Any]:
    lengths = array("I")
    lengths.frombytes(view[: 4 * ticks])
    flat = array(_RAGGED[spec.code])
    flat.frombytes(view[4 * ticks : 4 * ticks + 8 * spec.count])
    if _BIG_ENDIAN:
        lengths.byteswap()
        flat.byteswap()
    if sum(lengths) != spec.count:
        raise FormatError(f"column {spec.field}: lengths that do not add up to its values")
    values = _checked_numbers(flat, Spec(spec.part, spec.field, _RAGGED[spec.code], False))
    keep: list[bool] | None = None
    if bounds is not None and flat and not bounds[0] <= min(flat) <= max(flat) <= bounds[1]:
        keep = [bounds[0] <= v <= bounds[1] for v in values]
    out: list[Any] = []
    start = 0
    for length in lengths:
        end = start + length
        if keep is None:
            out.append(tuple(values[start:end]))
        else:
            kept = zip(values[start:end], keep[start:end], strict=True)
            out.append(tuple(v for v, k in kept if k))
        start = end
    return out
