"""The one query policy, and the record of what each GPU answers.

When a GPU is opened, what it answers is resolved once and kept in its ``Gpu`` record:
which variant of a versioned call works, which field ids answer, the process functions and
the byte layout of their entries, GPM, MIG, events. Every call goes through ``Query.ask``
(or ``Query.ask_first`` for versioned variants), and one function, ``meaning``, decides
what an error means: not supported (or a function the driver or the bindings lack) -> that
reading is never asked for again; no permission, unknown or anything else -> that reading
is n/a and asked for again ``RETRY_AFTER_S`` later; lost -> the GPU is lost and the other
GPUs keep being read.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import field
from typing import Any, TypeVar

import pynvml

from gputui.core.records import record
from gputui.sources.nvml.bindings import LIBRARY_MISMATCH, constant

T = TypeVar("T")

RETRY_AFTER_S = 30.0  # a reading that got no permission / unknown is asked for again then
PROCESS_UTIL_ROOM = 64  # per-process samples first asked for; grown when the driver says

LOST_CODES = frozenset(
    {
        pynvml.NVML_ERROR_GPU_IS_LOST,
        pynvml.NVML_ERROR_RESET_REQUIRED,
        constant("NVML_ERROR_GPU_NOT_FOUND", 28),
    }
)
# Codes that mean "this call will never answer on this GPU with this driver".
STOP_CODES = frozenset(
    {
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    }
)


class Verdict(enum.Enum):
    """What an NVML error means for the reading that got it."""

    STOP = "stop"  # not supported here: never ask again
    RETRY = "retry"  # no permission, unknown, busy...: n/a now, ask again later
    LOST = "lost"  # the GPU fell off the bus


def meaning(code: int | None) -> Verdict:
    """The one place that decides what an NVML return code means."""
    if code in LOST_CODES:
        return Verdict.LOST
    if code in STOP_CODES:
        return Verdict.STOP
    return Verdict.RETRY


class GpuLost(Exception):
    """Raised out of any reading of a GPU that fell off the bus."""


def error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


@record
class Mig:
    """One MIG instance as resolved from the layout."""

    handle: Any
    gpu_instance: int
    compute_instance: int | None
    profile: str | None
    uuid: str | None
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_current: int = 0
    gpm_have_previous: bool = False


@record
class Gpu:
    """One GPU's capability record and the state kept between ticks."""

    index: int
    handle: Any
    lost: bool = False
    memory_total: int | None = None
    # the query policy's memory: readings never asked for again, readings to ask later,
    # which variant of a versioned call answers
    stopped: set[str] = field(default_factory=set)
    retry_at: dict[str, float] = field(default_factory=dict)
    variant: dict[str, int] = field(default_factory=dict)
    # cadences: when each slow reading was last asked for, and its answer
    read_at: dict[str, float] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    # field ids in this GPU's per-tick batch
    fields: tuple[int, ...] = ()
    # the value types the per-tick batch held last tick (bindings.read_rows)
    field_kinds: tuple[int, ...] = ()
    # each batch's array, its ids set once (nvmlDeviceGetFieldValues fills in the rest)
    field_arrays: dict[tuple[int | tuple[int, int], ...], Any] = field(default_factory=dict)
    # process lists: kind -> candidate (symbol, entry size), best first
    process_fns: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    process_room: dict[str, int] = field(default_factory=dict)
    process_seen: dict[str, bool] = field(default_factory=dict)
    # the driver refused the compute process list this tick (no permission)
    processes_unread: bool = False
    # PCIe: byte counters answer; their width (the value type's); what their values showed
    # of it (rates.counter_width); the last reading; the sampled window
    counters: bool = False
    counter_bits: int = 64
    counter_wide: bool = False  # a value past 2**32 was read: 64 bits for sure
    counter_wraps_32: bool = False  # a 64-bit value below 2**32 stepped back: it wraps there
    last_counters: tuple[float, int, int] | None = None
    window: tuple[float, float | None, float | None] | None = None
    window_future: Future[tuple[float | None, float | None, int | None]] | None = None
    # GPM: two samples used in turn, allocated at open and freed at close
    gpm: bool = False
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_current: int = 0
    gpm_have_previous: bool = False
    # the driver's utilisation samples: the newest timestamp seen
    samples_seen: int | None = None
    # per-process utilisation: the newest sample's timestamp seen (0: none yet), the room
    process_util_seen: int = 0
    process_util_room: int = PROCESS_UTIL_ROOM
    mig: bool = False
    migs: list[Mig] = field(default_factory=list)
    events: bool = False
    max_link: tuple[int | None, int | None] = (None, None)
    # NVLink: how many links it has (0 none), the last throughput counters per link
    nvlinks: int = 0
    nvlink_last: dict[int, tuple[float, int | None, int | None]] = field(default_factory=dict)


class Query:
    """Every NVML call of the source goes through here: what an error means is remembered
    per GPU and reading, slow readings keep their own cadence, and calls are counted."""

    def __init__(self) -> None:
        #: the source's monotonic time of the tick being read
        self.now = 0.0
        #: NVML calls made since the count was last reset (one GPU's tick)
        self.calls = 0

    def failed(self, gpu: Gpu, key: str, code: int | None) -> None:
        verdict = meaning(code)
        if verdict is Verdict.LOST:
            raise GpuLost
        if verdict is Verdict.STOP:
            gpu.stopped.add(key)
        else:
            gpu.retry_at[key] = self.now + RETRY_AFTER_S

    def skip(self, gpu: Gpu, key: str) -> bool:
        if key in gpu.stopped:
            return True
        retry = gpu.retry_at.get(key)
        return retry is not None and self.now < retry

    def ask(self, gpu: Gpu, key: str, fn: Callable[..., T] | None, *args: Any) -> T | None:
        """One reading: its answer, or None (and what the error means remembered)."""
        if self.skip(gpu, key):
            return None
        if fn is None:
            gpu.stopped.add(key)
            return None
        self.calls += 1
        try:
            value = fn(*args)
        except pynvml.NVMLError as exc:
            self.failed(gpu, key, error_code(exc))
            return None
        except LIBRARY_MISMATCH:
            gpu.stopped.add(key)
            return None
        gpu.retry_at.pop(key, None)
        return value

    def ask_first(
        self,
        gpu: Gpu,
        key: str,
        variants: Sequence[tuple[Callable[..., Any] | None, tuple[Any, ...]]],
    ) -> Any:
        """The first variant of a versioned call that answers, found once and remembered.

        A variant that says it will never answer (not supported, function or symbol
        missing, version mismatch) hands over to the next; no permission or unknown makes
        the reading n/a and the search starts again ``RETRY_AFTER_S`` later."""
        if self.skip(gpu, key):
            return None
        chosen = gpu.variant.get(key)
        order = range(len(variants)) if chosen is None else (chosen,)
        for i in order:
            fn, args = variants[i]
            if fn is None:
                continue
            self.calls += 1
            try:
                value = fn(*args)
            except pynvml.NVMLError as exc:
                code = error_code(exc)
            except LIBRARY_MISMATCH:
                code = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
            else:
                gpu.variant[key] = i
                gpu.retry_at.pop(key, None)
                return value
            verdict = meaning(code)
            if verdict is not Verdict.STOP:
                self.failed(gpu, key, code)
                return None
        gpu.stopped.add(key)
        return None

    def due(self, gpu: Gpu, key: str, period: float) -> bool:
        last = gpu.read_at.get(key)
        if last is not None and self.now - last < period:
            return False
        gpu.read_at[key] = self.now
        return True

    def every(self, gpu: Gpu, key: str, period: float, read: Callable[[], T]) -> T | None:
        """``read()`` once per ``period``; the last answer in between."""
        if self.due(gpu, key, period):
            gpu.cache[key] = read()
        value: T | None = gpu.cache.get(key)
        return value

    def symbol(self, gpu: Gpu, key: str, name: str) -> Any:
        """The native function ``name`` for a call the bindings' wrapper makes twice; None
        (the reading never asked for again) where the driver lacks it."""
        try:
            return pynvml._nvmlGetFunctionPointer(name)
        except pynvml.NVMLError:
            gpu.stopped.add(key)
            return None
