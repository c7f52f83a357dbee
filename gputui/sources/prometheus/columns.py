"""A Prometheus server's range answers as history columns: each GPU's readings of each
kept metric over the step grid, written where its page's answer arrives (no frame of
every GPU at every step is ever built: at 8,192 GPUs those frames were most of a
point-in-time read's time and memory).

The readings are what ``node_readings.sample_of`` makes of the same series, value by value: DCGM's
blanks and values outside a reading's physical range are no reading, a field's first
series wins, the memory total is used + free + reserved, a MIG GPU's utilisation its
graphics engine's and its memory its instances'. Points are checked as ``History.take``
checks them (inside the window, on the grid, no more than the grid holds).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from typing import Any, Final

from gputui.core.dcgm import BY_NAME, FP64_BLANK, INT32_BLANK, INT32_MAX, INT64_BLANK, DcgmField
from gputui.core.names import Metric
from gputui.core.ranges import RANGES
from gputui.core.source import ColumnHistory, GpuColumns
from gputui.sources.prometheus.nodes import ClusterNode
from gputui.sources.prometheus.queries import NodeKey, node_key
from gputui.sources.prometheus.wire import labels_of
from gputui.sources.remote import GPU_NUMBER, INSTANCE_FIELDS

NAN: Final = math.nan
NO_REASONS: Final = -1  # sampling.history's "reasons unknown"
#: the model readings a column is kept for: what the history keeps, what it is made of
KEPT: Final = frozenset({m.value for m in Metric} | {"clock_reasons", "mem_free", "mem_reserved"})
_MEMORY_PARTS: Final = ("mem_used", "mem_free", "mem_reserved")
_MIG_USED: Final = "mig_used"
_GR_ACTIVE: Final = "gr_active"

#: per GPU: a column of floats per reading (model units), and its clock-event masks


def history_names() -> str:
    """The names a history's range query asks for (``{__name__=~...}``): the kept
    readings and the graphics engine's activity (a MIG GPU's utilisation)."""
    return "|".join(
        sorted(name for name, f in BY_NAME.items() if f.attr in KEPT or f.attr == _GR_ACTIVE)
    )


class _Gpu:
    __slots__ = ("columns", "reasons")

    def __init__(self, points: int) -> None:
        self.columns: dict[str, array[float]] = {}
        self.reasons: array[int] = array("q", [NO_REASONS]) * points

    def column(self, attr: str, points: int) -> array[float]:
        found = self.columns.get(attr)
        if found is None:
            found = self.columns[attr] = array("f", [NAN]) * points
        return found


class Columns:
    """Range answers (and, past the range, instant ones) on the grid ``start`` + k
    ``step``, k < ``points``, as columns per GPU index."""

    def __init__(self, start: float, end: float, step: float, points: int) -> None:
        self.start, self.end, self.step, self.points = start, end, step, points
        self.gpus: dict[int, _Gpu] = {}
        self.dropped = 0

    def take(
        self,
        result: list[dict[str, Any]],
        page: set[NodeKey],
        nodes: Mapping[NodeKey, ClusterNode],
    ) -> None:
        for series in result:
            labels = labels_of(series)
            key = node_key(labels) if labels is not None else None
            values = series.get("values")
            if labels is None or key is None or key not in page or not isinstance(values, list):
                self.dropped += 1
                continue
            if len(values) > self.points:
                self.dropped += 1
                continue
            target = self._target(nodes[key], labels)
            if target is not None:
                self._fill(*target, values)

    def take_instant(
        self,
        when: float,
        result: list[dict[str, Any]],
        page: set[NodeKey],
        nodes: Mapping[NodeKey, ClusterNode],
    ) -> None:
        """An instant answer at ``when`` (a step past the range: a lagging server's
        newest stretch), its points taken as the grid's."""
        pairs = [{**s, "values": [s.get("value")]} for s in result if isinstance(s, dict)]
        self.take(pairs, page, nodes)

    def grow(self, points: int) -> None:
        """Room for steps past the range (``take_instant``)."""
        extra = points - self.points
        if extra <= 0:
            return
        for gpu in self.gpus.values():
            gpu.reasons.extend(array("q", [NO_REASONS]) * extra)
            for column in gpu.columns.values():
                column.extend(array("f", [NAN]) * extra)
        self.points = points
        self.end = self.start + (points - 1) * self.step

    def _target(
        self, node: ClusterNode, labels: Mapping[str, str]
    ) -> tuple[_Gpu, str, DcgmField] | None:
        """Where a series' points go: its GPU's column of its reading, or None (a field
        not kept, a GPU the node was not listed with, a MIG instance's own reading)."""
        dcgm = BY_NAME.get(labels.get("__name__", ""))
        number = labels.get("gpu", "")
        if dcgm is None or not GPU_NUMBER.fullmatch(number) or int(number) not in node.gpus:
            return None
        attr = dcgm.attr
        if attr not in KEPT and attr != _GR_ACTIVE:
            return None
        instance = labels.get("GPU_I_ID")
        # a GPU-wide field repeated per MIG instance is the GPU's (its first series kept);
        # of an instance's own readings only its memory, added up, is the GPU's
        if instance is not None and GPU_NUMBER.fullmatch(instance) and dcgm.name in INSTANCE_FIELDS:
            if attr != "mem_used":
                return None
            attr = _MIG_USED
        index = node.first_index + node.gpus.index(int(number))
        gpu = self.gpus.get(index)
        if gpu is None:
            gpu = self.gpus[index] = _Gpu(self.points)
        return gpu, attr, dcgm

    def _fill(self, gpu: _Gpu, attr: str, dcgm: DcgmField, values: list[Any]) -> None:
        """A series' points into its column: those off the grid or outside the window
        counted as dropped, no reading (``remote.valid_reading``: NaN, negative, DCGM's
        blanks) left out, a column's first series winning (the instances' memory added
        up). The checks of ``wire.point`` and ``valid_reading`` written out in one loop:
        millions of points a cluster."""
        start, step, points, end = self.start, self.step, self.points, self.end
        cap, low_blank, high_blank = _blanks(dcgm)
        scale, integer = dcgm.scale, dcgm.integer
        masks = gpu.reasons if attr == "clock_reasons" else None
        column = gpu.column(attr, points) if masks is None else None
        adding = attr == _MIG_USED
        dropped = 0
        for pair in values:
            try:
                when, text = pair
                when, value = float(when), float(text)
            except (TypeError, ValueError, OverflowError):
                dropped += 1
                continue
            steps = (when - start) / step
            slot = round(steps) if start <= when <= end and isinstance(text, str) else -1
            if slot < 0 or abs(steps - slot) > 1e-6 or slot >= points:
                dropped += 1
                continue
            if not 0.0 <= value < cap or low_blank <= value <= high_blank:
                continue
            value = float(int(value * scale)) if integer else value * scale
            if masks is not None:
                if masks[slot] == NO_REASONS and value < 2**63:
                    masks[slot] = int(value)
            elif column is not None:
                held = column[slot]
                if held != held:  # NaN: no reading there yet
                    column[slot] = value
                elif adding:
                    column[slot] = held + value
        self.dropped += dropped

    def finish(self) -> ColumnHistory:
        """The grid's times from the first that holds a reading to the last, each GPU's
        columns in ``Metric`` order (float32, NaN where none; from ``at``, the last value,
        on) and masks, each GPU's last reading's time, and ``at``."""
        first, end = self.points, 0
        out: dict[int, GpuColumns] = {}
        last: dict[int, float] = {}
        for index, gpu in self.gpus.items():
            _derive(gpu)
            slots = [
                k for k in range(self.points) if any(c[k] == c[k] for c in gpu.columns.values())
            ]
            if not slots:
                continue
            first, end = min(first, slots[0]), max(end, slots[-1] + 1)
            last[index] = self.start + self.step * slots[-1]
            out[index] = (
                [_ranged(gpu.columns.get(m.value), m.value, self.points) for m in Metric],
                gpu.reasons,
            )
            gpu.columns = {}  # held by ``out`` now, or dropped
        if not out:
            return [], {}, {}, 0
        return [self.start + k * self.step for k in range(first, end)], out, last, first


def _derive(gpu: _Gpu) -> None:
    """The readings made of others, as ``node_readings.sample_of`` makes them."""
    columns = gpu.columns
    used, free = columns.get("mem_used"), columns.get("mem_free")
    mig = columns.get(_MIG_USED)
    if mig is not None:
        if used is None:
            used = columns["mem_used"] = mig
        else:
            used[:] = array("f", [u if u == u else m for u, m in zip(used, mig, strict=True)])
    if used is not None and free is not None:
        reserved = columns.get("mem_reserved")
        parts = zip(used, free, reserved or [0.0] * len(used), strict=True)
        columns["mem_total"] = array("f", [u + f + (r if r == r else 0.0) for u, f, r in parts])
    engine = columns.get(_GR_ACTIVE)
    util = columns.get("util_gpu")
    if engine is not None:
        if util is None:
            columns["util_gpu"] = engine
        else:
            util[:] = array("f", [u if u == u else e for u, e in zip(util, engine, strict=True)])
    temp = columns.get("mem_temp_c")
    if temp is not None:  # GDDR boards have no sensor; DCGM says 0 there
        temp[:] = array("f", [NAN if t == 0 else t for t in temp])


_BLANK: dict[int, array[float]] = {}


def _blanks(dcgm: DcgmField) -> tuple[float, float, float]:
    """The values of a field that are readings lie below the first, outside the other
    two (an int32-sized field's blanks from 0x7FFFFFF0 to 0x7FFFFFFF): ``dcgm.is_blank``
    as bounds."""
    if dcgm.blank == "double":
        return FP64_BLANK, math.inf, -math.inf
    if dcgm.blank == "int64":
        return float(INT64_BLANK), math.inf, -math.inf
    return float(INT64_BLANK), float(INT32_BLANK), float(INT32_MAX)


def _ranged(column: array[float] | None, attr: str, points: int) -> array[float]:
    """The column with every value outside the reading's range made unknown (in place)."""
    if column is None:
        blank = _BLANK.get(points)
        if blank is None:
            blank = _BLANK[points] = array("f", [NAN]) * points
        return blank
    low, high = RANGES.get(attr, (-math.inf, math.inf))
    for k, value in enumerate(column):
        if value == value and not low <= value <= high:
            column[k] = NAN
    return column
