"""The live source: NVIDIA's NVML through nvidia-ml-py. The only module importing pynvml.

One query policy. When a GPU is opened, what it answers is resolved once and kept in its
``_Gpu`` record: which variant of a versioned call works, which field ids answer, the
process functions and the byte layout of their entries, GPM, MIG, events. Every call goes
through ``_ask`` (or ``_ask_first`` for versioned variants), and one function, ``meaning``,
decides what an error means: not supported (or a function the driver or the bindings lack)
-> that reading is never asked for again; no permission, unknown or anything else -> that
reading is n/a and asked for again ``RETRY_AFTER_S`` later; lost -> the GPU is lost and
the other GPUs keep being read.

Cadences. Only live readings are asked for every tick; slower ones are asked for on their
own period and the last answer is reused in between (the ``*_PERIOD_S`` constants), so a
tick stays within about 12 NVML calls per GPU (benchmarks/tick_cost.py counts them).
``nvmlDeviceGetPcieThroughput``, which blocks about 20 ms in the driver per call, never runs
on the tick: windows are sampled on a small thread pool, all GPUs in parallel, and each tick
reuses the newest window.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import functools
import os
import struct
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pynvml

from gputui.config import PROCESS_UTIL_PERIOD_S
from gputui.model import (
    DeviceInfo,
    Frame,
    GpuSample,
    MigInstance,
    Note,
    NvLinkSample,
    ProcessSample,
    XidEvent,
)
from gputui.names import NoteKind, SourceKind
from gputui.pcie import link_bandwidth
from gputui.sources.base import SourceUnavailable
from gputui.sources.host import GpuProcess, HostReader

T = TypeVar("T")


# -- names older nvidia-ml-py releases lack --------------------------------------------
# pyproject allows nvidia-ml-py>=12.535. The oldest such release, 12.535.77, lacks
# NVML_ERROR_GPU_NOT_FOUND and NVMLLibraryMismatchError (added in 12.550), the _v2 process
# wrappers (12.550), NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES (12.555),
# NVML_DEVICE_ARCH_BLACKWELL (12.560), nvmlDeviceGetTemperatureV and
# nvmlDeviceGetMarginTemperature (12.570). Every binding name that is not in every release
# from 12.535.77 on is read through the three helpers below, never as ``pynvml.NAME``.


def _constant(name: str, value: int) -> int:
    """The bindings' constant ``name``, or ``value`` (what nvml.h defines) where they lack it."""
    found = getattr(pynvml, name, value)
    return found if isinstance(found, int) else value


def _function(name: str) -> Callable[..., Any] | None:
    """The bindings' wrapper ``name``, or None where they lack it: the caller reads that as
    "not supported", as it does when the driver lacks the function."""
    fn = getattr(pynvml, name, None)
    return fn if callable(fn) else None


class _NeverRaised(Exception):
    """Stands in for an exception class the loaded bindings do not define."""


def _exception(name: str) -> type[Exception]:
    """The bindings' exception class ``name``, or one that nothing raises."""
    found = getattr(pynvml, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return _NeverRaised


_LOST_CODES = frozenset(
    {
        pynvml.NVML_ERROR_GPU_IS_LOST,
        pynvml.NVML_ERROR_RESET_REQUIRED,
        _constant("NVML_ERROR_GPU_NOT_FOUND", 28),
    }
)
# Codes that mean "this call will never answer on this GPU with this driver".
_STOP_CODES = frozenset(
    {
        pynvml.NVML_ERROR_NOT_SUPPORTED,
        pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
        pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    }
)
# What 12.550+ raises from an unversioned wrapper whose symbol the driver lacks.
_LIBRARY_MISMATCH = _exception("NVMLLibraryMismatchError")


class Verdict(enum.Enum):
    """What an NVML error means for the reading that got it."""

    STOP = "stop"  # not supported here: never ask again
    RETRY = "retry"  # no permission, unknown, busy...: n/a now, ask again later
    LOST = "lost"  # the GPU fell off the bus


def meaning(code: int | None) -> Verdict:
    """The one place that decides what an NVML return code means."""
    if code in _LOST_CODES:
        return Verdict.LOST
    if code in _STOP_CODES:
        return Verdict.STOP
    return Verdict.RETRY


# -- cadences (seconds) ------------------------------------------------------------------
RETRY_AFTER_S = 30.0  # a reading that got no permission / unknown is asked for again then
STATIC_PERIOD_S = 30.0  # settings: application clocks, enforced limit, MIG layout
GPM_PERIOD_S = 2.0  # GPM samples (SM and tensor activity over the period)
MARGIN_PERIOD_S = 2.0  # the thermal margin (R570+)
LINK_PERIOD_S = 10.0  # current PCIe generation and width
SLOW_PERIOD_S = 10.0  # fan, performance state, memory and graphics clocks
PROCESS_EXTRA_PERIOD_S = 10.0  # graphics and MPS process lists, while they are empty
VIOLATION_PERIOD_S = 10.0  # cumulative throttle counters
MIG_PERIOD_S = 5.0  # each MIG instance's memory
THROUGHPUT_PERIOD_S = 5.0  # one 20 ms PCIe throughput window per direction, off the tick
THROUGHPUT_STALE_S = 3 * THROUGHPUT_PERIOD_S  # an older window is not shown
MAX_EVENTS_PER_READ = 64
NVLINK_PERIOD_S = 10.0  # every link's state, throughput and error counters: one batch
FABRIC_PERIOD_S = 30.0  # the NVSwitch fabric state (Fabric Manager can start later)

_ARCHITECTURES = {
    pynvml.NVML_DEVICE_ARCH_KEPLER: "Kepler",
    pynvml.NVML_DEVICE_ARCH_MAXWELL: "Maxwell",
    pynvml.NVML_DEVICE_ARCH_PASCAL: "Pascal",
    pynvml.NVML_DEVICE_ARCH_VOLTA: "Volta",
    pynvml.NVML_DEVICE_ARCH_TURING: "Turing",
    pynvml.NVML_DEVICE_ARCH_AMPERE: "Ampere",
    pynvml.NVML_DEVICE_ARCH_ADA: "Ada",
    pynvml.NVML_DEVICE_ARCH_HOPPER: "Hopper",
    _constant("NVML_DEVICE_ARCH_BLACKWELL", 10): "Blackwell",
}

_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

# Values NVML uses for "no reading" inside an otherwise successful answer.
_SENTINELS = frozenset({0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFF})

# Field ids (nvml.h), read in one nvmlDeviceGetFieldValues call per GPU per tick; the ones
# a GPU does not answer when it is opened are left out of its batch.
FI_ECC_SBE_VOL = 3  # NVML_FI_DEV_ECC_SBE_VOL_TOTAL
FI_ECC_DBE_VOL = 4  # NVML_FI_DEV_ECC_DBE_VOL_TOTAL
FI_MEMORY_TEMP = 82  # NVML_FI_DEV_MEMORY_TEMP
FI_ENERGY = 83  # NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
FI_REPLAY = 94  # NVML_FI_DEV_PCIE_REPLAY_COUNTER
FI_REMAPPED_PENDING = 144  # NVML_FI_DEV_REMAPPED_PENDING
FI_POWER_LIMIT = 190  # NVML_FI_DEV_POWER_CURRENT_LIMIT, mW
FI_PCIE_TX_BYTES = _constant("NVML_FI_DEV_PCIE_COUNT_TX_BYTES", 197)  # cumulative, R555+
FI_PCIE_RX_BYTES = _constant("NVML_FI_DEV_PCIE_COUNT_RX_BYTES", 198)  # cumulative, R555+
_CANDIDATE_FIELDS = (
    FI_REPLAY,
    FI_ECC_SBE_VOL,
    FI_ECC_DBE_VOL,
    FI_REMAPPED_PENDING,
    FI_PCIE_TX_BYTES,
    FI_PCIE_RX_BYTES,
    FI_MEMORY_TEMP,
    FI_ENERGY,
    FI_POWER_LIMIT,
)

# NVLink fields, asked per link (scopeId = the link) in one batch every NVLINK_PERIOD_S
FI_NVLINK_TX_KIB = 138  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, cumulative KiB
FI_NVLINK_RX_KIB = 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
FI_NVLINK_REPLAY = 161  # NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY
FI_NVLINK_RECOVERY = 162  # NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY
FI_NVLINK_CRC = 163  # NVML_FI_DEV_NVLINK_ERROR_DL_CRC
FI_NVLINK_STATE = 165  # NVML_FI_DEV_NVLINK_GET_STATE, 1 active
_NVLINK_FIELDS = (
    FI_NVLINK_STATE,
    FI_NVLINK_CRC,
    FI_NVLINK_REPLAY,
    FI_NVLINK_RECOVERY,
    FI_NVLINK_TX_KIB,
    FI_NVLINK_RX_KIB,
)
# nvmlDeviceGetTopologyCommonAncestor's levels as `nvidia-smi topo -m` abbreviates them
TOPOLOGY_LEVELS = {0: "BRD", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_AFFINITY_SCOPE_NODE = 0  # NVML_AFFINITY_SCOPE_NODE
_FABRIC_STATES = {0: "none", 1: "not-started", 2: "in-progress", 3: "completed"}

_GPM_SM_UTIL = 2  # NVML_GPM_METRIC_SM_UTIL
_GPM_ANY_TENSOR_UTIL = 5  # NVML_GPM_METRIC_ANY_TENSOR_UTIL

_THROUGHPUT_UNIT = 1024  # nvmlDeviceGetPcieThroughput reports KiB/s
_GPU_UTILIZATION_SAMPLES = 1  # NVML_GPU_UTILIZATION_SAMPLES
_SAMPLE_ROOM = 128  # the driver keeps fewer utilisation samples than this
_PROCESS_UTIL_ROOM = 64  # per-process samples first asked for; grown when the driver says
_PROCESS_UTIL_MAX_ROOM = 8192  # never more, whatever count the driver claims
_XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
_TIMEOUT = pynvml.NVML_ERROR_TIMEOUT
# (model field, NVML_PERF_POLICY_*): cumulative ns spent held down by each cause
_VIOLATIONS = (
    ("violation_power_s", 0),  # NVML_PERF_POLICY_POWER
    ("violation_thermal_s", 1),  # NVML_PERF_POLICY_THERMAL
    ("violation_board_s", 3),  # NVML_PERF_POLICY_BOARD_LIMIT
    ("violation_reliability_s", 5),  # NVML_PERF_POLICY_RELIABILITY
)


class _GpuLost(Exception):
    pass


# -- process entries -----------------------------------------------------------------------
class _ProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t, what the unversioned process functions fill (16 bytes)."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _ProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t: what _v2 fills, and _v3 on drivers from R550 (24 bytes)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class _ProcessInfoR535(ctypes.Structure):
    """What R535 drivers' _v3 functions fill: 32 bytes, with usedGpuCcProtectedMemory,
    under the same function name and without a version field."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


_ENTRY_STRUCTS: dict[int, type[ctypes.Structure]] = {
    ctypes.sizeof(_ProcessInfoV1): _ProcessInfoV1,
    ctypes.sizeof(_ProcessInfoV2): _ProcessInfoV2,
    ctypes.sizeof(_ProcessInfoR535): _ProcessInfoR535,
}
_ENTRY_V2 = ctypes.sizeof(_ProcessInfoV2)
_ENTRY_R535 = ctypes.sizeof(_ProcessInfoR535)
# The process lists gputui reads: (kind, the functions' middle name).
_PROCESS_KINDS = (
    ("compute", "ComputeRunningProcesses"),
    ("graphics", "GraphicsRunningProcesses"),
    ("mps", "MPSComputeRunningProcesses"),
)
_NO_INSTANCE = 0xFFFFFFFF


def _pid_max() -> int:
    try:
        return int(Path("/proc/sys/kernel/pid_max").read_text().strip())
    except (OSError, ValueError):
        return 4_194_304  # Linux's largest


_PID_MAX = _pid_max()


def has_symbol(name: str) -> bool:
    """Whether the loaded libnvidia-ml exports ``name`` (a symbol lookup, not an NVML call)."""
    try:
        pynvml._nvmlGetFunctionPointer(name)
    except pynvml.NVMLError:
        return False
    return True


def r535_process_layout() -> bool:
    """R535 drivers fill _v3 process entries of 32 bytes. They are the only ones to export
    nvmlDeviceGetConfComputeMemSizeInfo (R535) without nvmlDeviceGetRunningProcessDetailList
    (R550, which went back to 24-byte _v3 entries)."""
    return has_symbol("nvmlDeviceGetConfComputeMemSizeInfo") and not has_symbol(
        "nvmlDeviceGetRunningProcessDetailList"
    )


@dataclass(frozen=True)
class _Proc:
    pid: int
    memory: int | None
    gpu_instance: int | None
    compute_instance: int | None


class _Sample(ctypes.Structure):
    """nvmlSample_t: a timestamp (µs) and a value union."""

    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", pynvml.c_nvmlValue_t)]


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _clean(value: int | None) -> int | None:
    if value is None or value in _SENTINELS:
        return None
    return int(value)


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _handle_key(handle: Any) -> int | None:
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return None


@dataclass
class _Mig:
    """One MIG instance as resolved from the layout."""

    handle: Any
    gpu_instance: int
    compute_instance: int | None
    profile: str | None
    uuid: str | None
    gpm_samples: list[Any] = field(default_factory=list)
    gpm_current: int = 0
    gpm_have_previous: bool = False


@dataclass
class _Gpu:
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
    # each batch's array, its ids set once (nvmlDeviceGetFieldValues fills in the rest)
    field_arrays: dict[tuple[int | tuple[int, int], ...], Any] = field(default_factory=dict)
    # process lists: kind -> candidate (symbol, entry size), best first
    process_fns: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    process_room: dict[str, int] = field(default_factory=dict)
    process_seen: dict[str, bool] = field(default_factory=dict)
    # PCIe: byte counters answer; their width; the last reading; the sampled window
    counters: bool = False
    counter_bits: int = 64
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
    process_util_room: int = _PROCESS_UTIL_ROOM
    mig: bool = False
    migs: list[_Mig] = field(default_factory=list)
    events: bool = False
    max_link: tuple[int | None, int | None] = (None, None)
    # NVLink: how many links it has (0 none), the last throughput counters per link
    nvlinks: int = 0
    nvlink_last: dict[int, tuple[float, int | None, int | None]] = field(default_factory=dict)


class NvmlSource:
    """Reads real GPUs. Initialise once; ``close`` only after the sampler has stopped."""

    label = "NVML"
    kind = SourceKind.LIVE

    def __init__(
        self,
        host: HostReader | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        pcie_throughput_fallback: bool = True,
        sysfs: Path = Path("/sys"),
    ) -> None:
        self._sysfs = sysfs
        self._host = host
        self._clock = clock
        self._monotonic = monotonic
        self._fallback_throughput = pcie_throughput_fallback
        self._gpus: list[_Gpu] = []
        self._system = _Gpu(index=-1, handle=None)
        self._open = False
        self._now = 0.0
        self._pool: ThreadPoolExecutor | None = None
        self._event_set: Any = None
        self._by_handle: dict[int, _Gpu] = {}
        #: NVML calls the last ``read`` made per GPU (benchmarks/tick_cost.py prints them).
        self.last_calls: dict[int, int] = {}
        self._calls = 0

    # -- the query policy ----------------------------------------------------------
    def _failed(self, gpu: _Gpu, key: str, code: int | None) -> None:
        verdict = meaning(code)
        if verdict is Verdict.LOST:
            raise _GpuLost
        if verdict is Verdict.STOP:
            gpu.stopped.add(key)
        else:
            gpu.retry_at[key] = self._now + RETRY_AFTER_S

    def _skip(self, gpu: _Gpu, key: str) -> bool:
        if key in gpu.stopped:
            return True
        retry = gpu.retry_at.get(key)
        return retry is not None and self._now < retry

    def _ask(self, gpu: _Gpu, key: str, fn: Callable[..., T] | None, *args: Any) -> T | None:
        """One reading: its answer, or None (and what the error means remembered)."""
        if self._skip(gpu, key):
            return None
        if fn is None:
            gpu.stopped.add(key)
            return None
        self._calls += 1
        try:
            value = fn(*args)
        except pynvml.NVMLError as exc:
            self._failed(gpu, key, _error_code(exc))
            return None
        except _LIBRARY_MISMATCH:
            gpu.stopped.add(key)
            return None
        gpu.retry_at.pop(key, None)
        return value

    def _ask_first(
        self,
        gpu: _Gpu,
        key: str,
        variants: Sequence[tuple[Callable[..., Any] | None, tuple[Any, ...]]],
    ) -> Any:
        """The first variant of a versioned call that answers, found once and remembered.

        A variant that says it will never answer (not supported, function or symbol
        missing, version mismatch) hands over to the next; no permission or unknown makes
        the reading n/a and the search starts again ``RETRY_AFTER_S`` later."""
        if self._skip(gpu, key):
            return None
        chosen = gpu.variant.get(key)
        order = range(len(variants)) if chosen is None else (chosen,)
        for i in order:
            fn, args = variants[i]
            if fn is None:
                continue
            self._calls += 1
            try:
                value = fn(*args)
            except pynvml.NVMLError as exc:
                code = _error_code(exc)
            except _LIBRARY_MISMATCH:
                code = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND
            else:
                gpu.variant[key] = i
                gpu.retry_at.pop(key, None)
                return value
            verdict = meaning(code)
            if verdict is not Verdict.STOP:
                self._failed(gpu, key, code)
                return None
        gpu.stopped.add(key)
        return None

    def _due(self, gpu: _Gpu, key: str, period: float) -> bool:
        last = gpu.read_at.get(key)
        if last is not None and self._now - last < period:
            return False
        gpu.read_at[key] = self._now
        return True

    def _every(self, gpu: _Gpu, key: str, period: float, read: Callable[[], T]) -> T | None:
        """``read()`` once per ``period``; the last answer in between."""
        if self._due(gpu, key, period):
            gpu.cache[key] = read()
        value: T | None = gpu.cache.get(key)
        return value

    # -- lifecycle ---------------------------------------------------------------
    def open(self) -> tuple[DeviceInfo, ...]:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(_init_failure(exc)) from exc
        self._open = True
        self._now = self._monotonic()
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            self.close()
            raise SourceUnavailable(f"NVML could not count the GPUs ({exc}).") from exc
        system = self._system
        driver = self._ask(system, "driver", pynvml.nvmlSystemGetDriverVersion)
        cuda = self._ask_first(
            system,
            "cuda",
            [
                (_function("nvmlSystemGetCudaDriverVersion_v2"), ()),
                (_function("nvmlSystemGetCudaDriverVersion"), ()),
            ],
        )
        r535 = r535_process_layout()
        devices = []
        for index in range(count):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except pynvml.NVMLError as exc:
                gpu = _Gpu(index=index, handle=None, lost=True)
                self._gpus.append(gpu)
                devices.append(DeviceInfo(index=index, name=f"unreadable GPU ({exc})"))
                continue
            gpu = _Gpu(index=index, handle=handle)
            self._gpus.append(gpu)
            try:
                info = self._device_info(gpu, driver, cuda)
                self._resolve(gpu, r535)
            except _GpuLost:  # one DeviceInfo per GPU, lost ones too
                gpu.lost = True
                devices.append(DeviceInfo(index=index, name="lost GPU"))
            else:
                devices.append(info)
        devices = self._topology(devices)
        self._open_events()
        return tuple(devices)

    def close(self) -> None:
        if not self._open:
            return
        if self._pool is not None:  # every thread out of NVML before it shuts down
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for gpu in self._gpus:
            self._free_gpm(gpu.gpm_samples)
            for mig in gpu.migs:
                self._free_gpm(mig.gpm_samples)
        if self._event_set is not None:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._event_set)
            self._event_set = None
        self._open = False
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()

    def _drop_migs(self, gpu: _Gpu) -> None:
        for mig in gpu.migs:
            self._free_gpm(mig.gpm_samples)
        gpu.migs = []

    @staticmethod
    def _free_gpm(samples: list[Any]) -> None:
        while samples:
            sample = samples.pop()
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlGpmSampleFree(sample)

    # -- static facts and capabilities, at open ---------------------------------
    def _device_info(self, gpu: _Gpu, driver: Any, cuda: Any) -> DeviceInfo:
        h = gpu.handle
        name = self._ask(gpu, "name", pynvml.nvmlDeviceGetName, h)
        uuid = self._ask(gpu, "uuid", pynvml.nvmlDeviceGetUUID, h)
        pci = self._ask(gpu, "pci", pynvml.nvmlDeviceGetPciInfo, h)
        arch = self._ask(gpu, "arch", pynvml.nvmlDeviceGetArchitecture, h)
        cc = self._ask(gpu, "cc", pynvml.nvmlDeviceGetCudaComputeCapability, h)
        memory = self._memory(gpu, h, "memory")
        constraints = self._ask(
            gpu, "constraints", pynvml.nvmlDeviceGetPowerManagementLimitConstraints, h
        )
        mig = self._ask(gpu, "mig_mode", pynvml.nvmlDeviceGetMigMode, h)
        ecc = self._ask(gpu, "ecc_mode", pynvml.nvmlDeviceGetEccMode, h)
        persistence = self._ask(gpu, "persistence", pynvml.nvmlDeviceGetPersistenceMode, h)
        compute_mode = self._ask(gpu, "compute_mode", pynvml.nvmlDeviceGetComputeMode, h)
        gpm = self._ask(gpu, "gpm_support", _function("nvmlGpmQueryDeviceSupport"), h)
        gpu.gpm = bool(gpm is not None and gpm.isSupportedDevice)
        gpu.mig = bool(mig is not None and mig[0])
        gpu.memory_total = int(memory.total) if memory is not None else None

        def clock(kind: int) -> int | None:
            return _clean(
                self._ask(gpu, f"max_clock{kind}", pynvml.nvmlDeviceGetMaxClockInfo, h, kind)
            )

        def default_app(kind: int) -> int | None:
            fn = pynvml.nvmlDeviceGetDefaultApplicationsClock
            return _clean(self._ask(gpu, f"default_app{kind}", fn, h, kind))

        def threshold(kind: int) -> float | None:
            fn = pynvml.nvmlDeviceGetTemperatureThreshold
            value = _clean(self._ask(gpu, f"threshold{kind}", fn, h, kind))
            return float(value) if value else None

        def watts(key: str, fn: Callable[..., int]) -> float | None:
            value = _clean(self._ask(gpu, key, fn, h))
            return value / 1000.0 if value else None

        gpu.max_link = (
            _clean(self._ask(gpu, "max_gen", pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h)),
            _clean(self._ask(gpu, "max_width", pynvml.nvmlDeviceGetMaxPcieLinkWidth, h)),
        )

        return DeviceInfo(
            index=gpu.index,
            name=_text(name) if name is not None else f"GPU {gpu.index}",
            uuid=_text(uuid) if uuid is not None else None,
            pci_bus_id=_text(pci.busId) if pci is not None else None,
            architecture=_ARCHITECTURES.get(arch) if arch is not None else None,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
            memory_total=gpu.memory_total,
            max_sm_clock_mhz=clock(pynvml.NVML_CLOCK_SM),
            max_mem_clock_mhz=clock(pynvml.NVML_CLOCK_MEM),
            max_graphics_clock_mhz=clock(pynvml.NVML_CLOCK_GRAPHICS),
            default_app_sm_clock_mhz=default_app(pynvml.NVML_CLOCK_SM),
            default_app_mem_clock_mhz=default_app(pynvml.NVML_CLOCK_MEM),
            temp_slowdown_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
            temp_shutdown_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
            temp_gpu_max_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
            temp_mem_max_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
            power_limit_w=watts("limit", pynvml.nvmlDeviceGetEnforcedPowerLimit),
            power_default_limit_w=watts(
                "default_limit", pynvml.nvmlDeviceGetPowerManagementDefaultLimit
            ),
            power_min_limit_w=constraints[0] / 1000.0 if constraints else None,
            power_max_limit_w=constraints[1] / 1000.0 if constraints else None,
            pcie_max_gen=gpu.max_link[0],
            pcie_max_width=gpu.max_link[1],
            pcie_gpu_max_gen=_clean(
                self._ask(gpu, "gpu_max_gen", _function("nvmlDeviceGetGpuMaxPcieLinkGeneration"), h)
            ),
            persistence_mode=bool(persistence) if persistence is not None else None,
            compute_mode=_COMPUTE_MODES.get(compute_mode) if compute_mode is not None else None,
            mig_mode=gpu.mig if mig is not None else None,
            ecc_enabled=bool(ecc[0]) if ecc is not None else None,
            driver_version=_text(driver) if driver is not None else None,
            cuda_driver_version=_cuda_version(cuda),
            gpm_supported=gpu.gpm,
        )

    def _resolve(self, gpu: _Gpu, r535: bool) -> None:
        """What this GPU answers, found once: field ids, process functions, GPM samples."""
        answered = self._field_values(gpu, _CANDIDATE_FIELDS, probe=True)
        gpu.fields = tuple(f for f in _CANDIDATE_FIELDS if f in answered)
        # Counters only where both really answered: a retry-type error at open (-1) is no
        # counter, and the sampled throughput windows must stay in use.
        gpu.counters = answered.get(FI_PCIE_TX_BYTES, -1) >= 0 and (
            answered.get(FI_PCIE_RX_BYTES, -1) >= 0
        )
        for kind, what in _PROCESS_KINDS:
            candidates = []
            for suffix, size in (
                ("_v3", _ENTRY_R535 if r535 else _ENTRY_V2),
                ("_v2", _ENTRY_V2),
                ("", ctypes.sizeof(_ProcessInfoV1)),
            ):
                symbol = f"nvmlDeviceGet{what}{suffix}"
                if has_symbol(symbol):
                    candidates.append((symbol, size))
            gpu.process_fns[kind] = candidates
        if gpu.gpm:
            try:
                for _ in range(2):
                    self._calls += 1
                    gpu.gpm_samples.append(pynvml.nvmlGpmSampleAlloc())
            except pynvml.NVMLError:
                self._free_gpm(gpu.gpm_samples)
                gpu.gpm = False
        if gpu.mig:
            gpu.migs = self._mig_layout(gpu)
            gpu.read_at["mig_layout"] = self._now

    # -- topology, at open --------------------------------------------------------
    def _topology(self, devices: list[DeviceInfo]) -> list[DeviceInfo]:
        """NUMA node, CPU affinity, the PCIe path to every other GPU and the NVLinks of
        each GPU: static, read once (no root, nothing changed)."""
        count = len(self._gpus)
        levels: dict[tuple[int, int], str] = {}
        common = pynvml.nvmlDeviceGetTopologyCommonAncestor
        for a in self._gpus:
            for b in self._gpus[a.index + 1 :]:
                if a.lost or b.lost:
                    continue
                try:
                    level = self._ask(a, f"topology{b.index}", common, a.handle, b.handle)
                except _GpuLost:
                    a.lost = True
                    break
                if level is not None:
                    levels[(a.index, b.index)] = levels[(b.index, a.index)] = TOPOLOGY_LEVELS.get(
                        int(level), ""
                    )
        out = []
        for gpu, device in zip(self._gpus, devices, strict=True):
            if gpu.lost or gpu.handle is None:
                out.append(device)
                continue
            try:
                nvlink_remote, nvlink_version = self._nvlink_layout(gpu)
                out.append(
                    dataclasses.replace(
                        device,
                        numa_node=self._numa_node(gpu, device.pci_bus_id),
                        cpu_affinity=self._cpu_affinity(gpu),
                        pcie_topology=(
                            tuple(
                                "X" if j == gpu.index else levels.get((gpu.index, j), "")
                                for j in range(count)
                            )
                            if levels or count == 1
                            else None
                        ),
                        nvlink_remote=nvlink_remote,
                        nvlink_version=nvlink_version,
                    )
                )
            except _GpuLost:
                gpu.lost = True
                out.append(device)
        return out

    def _numa_node(self, gpu: _Gpu, bus_id: str | None) -> int | None:
        node = self._ask(gpu, "numa_node", _function("nvmlDeviceGetNumaNodeId"), gpu.handle)
        if node is None and bus_id:
            # the kernel's view: /sys/bus/pci/devices/0000:18:00.0/numa_node
            name = bus_id.lower()[-12:]
            try:
                text = (self._sysfs / "bus" / "pci" / "devices" / name / "numa_node").read_text()
                node = int(text.strip())
            except (OSError, ValueError):
                return None
        return int(node) if node is not None and 0 <= int(node) < 4096 else None

    def _cpu_affinity(self, gpu: _Gpu) -> str | None:
        words = max(16, ((os.cpu_count() or 0) + 63) // 64)  # room for 1024 CPUs at least
        mask = self._ask_first(
            gpu,
            "cpu_affinity",
            [
                (
                    _function("nvmlDeviceGetCpuAffinityWithinScope"),
                    (gpu.handle, words, _AFFINITY_SCOPE_NODE),
                ),
                (_function("nvmlDeviceGetCpuAffinity"), (gpu.handle, words)),
            ],
        )
        if mask is None:
            return None
        cpus = [w * 64 + b for w in range(words) for b in range(64) if int(mask[w]) >> b & 1]
        return cpu_list(cpus) or None

    def _nvlink_layout(self, gpu: _Gpu) -> tuple[tuple[str, ...] | None, int | None]:
        """The GPU's NVLinks: which exist, where each goes, their version."""
        remote: list[str] = []
        version: int | None = None
        limit = _constant("NVML_NVLINK_MAX_LINKS", 18)
        for link in range(limit):
            key = f"nvlink{link}"
            state = self._ask(
                gpu, key + ".state", pynvml.nvmlDeviceGetNvLinkState, gpu.handle, link
            )
            if state is None:
                if key + ".state" in gpu.stopped or link > 0:
                    break  # no such link (or none at all): the links end here
                return None, None  # not readable now: unknown
            where = ""
            if state:
                info = self._ask(
                    gpu, key + ".remote", pynvml.nvmlDeviceGetNvLinkRemotePciInfo, gpu.handle, link
                )
                where = _text(info.busId) if info is not None else ""
                found = self._ask(
                    gpu, key + ".version", pynvml.nvmlDeviceGetNvLinkVersion, gpu.handle, link
                )
                version = version or (_clean(found) if found else None)
            remote.append(where)
        gpu.nvlinks = len(remote)
        return tuple(remote), version

    def _open_events(self) -> None:
        """One event set for every GPU, registered for critical Xid errors."""
        create = _function("nvmlEventSetCreate")
        register = _function("nvmlDeviceRegisterEvents")
        if create is None or register is None or not self._gpus:
            return
        try:
            self._event_set = create()
        except pynvml.NVMLError:
            return
        for gpu in self._gpus:
            if gpu.lost:
                continue
            try:
                register(gpu.handle, _XID_EVENT, self._event_set)
            except pynvml.NVMLError as exc:
                if meaning(_error_code(exc)) is Verdict.LOST:
                    gpu.lost = True
                continue
            gpu.events = True
            key = _handle_key(gpu.handle)
            if key is not None:
                self._by_handle[key] = gpu
        if not self._by_handle:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlEventSetFree(self._event_set)
            self._event_set = None

    def _memory(self, gpu: _Gpu, handle: Any, key: str) -> Any:
        # The v2 struct matches nvidia-smi's "used" on recent drivers; v1 for old ones.
        v2 = _memory_v2 if _MEMORY_V2 is not None else None  # bindings from 12.535 on
        return self._ask_first(gpu, key, [(v2, (handle,)), (_memory_v1, (handle,))])

    # -- one tick ----------------------------------------------------------------
    def read(self) -> Frame:
        now = self._clock()
        self._now = self._monotonic()
        xids = self._poll_events(now)
        self._harvest_windows()
        samples: list[GpuSample] = []
        processes: list[GpuProcess] = []
        for gpu in self._gpus:
            if gpu.lost:
                samples.append(GpuSample(index=gpu.index, lost=True))
                continue
            self._calls = 0
            try:
                procs = self._processes(gpu)
                sample = self._sample(gpu, procs, xids.get(gpu.index, ()))
                sm_util = self._process_util(gpu, procs)
                samples.append(sample)
                processes.extend(
                    GpuProcess(p.pid, gpu.index, p.memory, kind, sm_util.get(p.pid))
                    for kind, p in procs
                )
            except _GpuLost:
                gpu.lost = True
                samples.append(GpuSample(index=gpu.index, lost=True))
            self.last_calls[gpu.index] = self._calls
        self._start_windows()
        notes: tuple[Note, ...] = ()
        if self._host is None:
            out = tuple(
                ProcessSample(
                    pid=p.pid,
                    gpu_index=p.gpu_index,
                    gpu_memory=p.gpu_memory,
                    kind=p.kind,
                    sm_util=p.sm_util,
                )
                for p in processes
            )
            host = None
        else:
            out, notes = self._host.join_processes(processes)
            host = self._host.read_host()
        lost = [s.index for s in samples if s.lost]
        if lost:
            notes += (
                Note(
                    NoteKind.GPU_LOST,
                    "GPU " + ", ".join(str(i) for i in lost) + " fell off the bus (GPU is lost): "
                    "check dmesg for Xid 79; it needs a reset or a reboot.",
                ),
            )
        return Frame(time=now, gpus=tuple(samples), host=host, processes=out, notes=notes)

    def _sample(
        self, gpu: _Gpu, procs: list[tuple[str, _Proc]], xids: Sequence[XidEvent]
    ) -> GpuSample:
        h = gpu.handle
        ask = functools.partial(self._ask, gpu)
        util = ask("util", _utilization, h)
        memory = self._memory(gpu, h, "memory")
        temp = self._ask_first(
            gpu,
            "temp",
            [
                (
                    _temperature_v if _TEMPERATURE_V1 is not None else None,
                    (h, pynvml.NVML_TEMPERATURE_GPU),
                ),
                (pynvml.nvmlDeviceGetTemperature, (h, pynvml.NVML_TEMPERATURE_GPU)),
            ],
        )
        reasons = self._ask_first(
            gpu,
            "reasons",
            [
                (_function("nvmlDeviceGetCurrentClocksEventReasons"), (h,)),
                (_function("nvmlDeviceGetCurrentClocksThrottleReasons"), (h,)),
            ],
        )
        power_mw = _clean(ask("power", pynvml.nvmlDeviceGetPowerUsage, h))
        sm_clock = _clean(ask("sm_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM))
        fields = self._field_values(gpu, gpu.fields) if gpu.fields else {}
        util_samples = self._util_samples(gpu)
        margin = self._every(
            gpu,
            "margin",
            MARGIN_PERIOD_S,
            lambda: ask("margin", _function("nvmlDeviceGetMarginTemperature"), h),
        )
        sm_activity, tensor_activity = self._every(
            gpu, "gpm", GPM_PERIOD_S, lambda: self._gpm(gpu)
        ) or (
            None,
            None,
        )
        slow = self._every(gpu, "slow", SLOW_PERIOD_S, lambda: self._slow(gpu)) or {}
        link = self._every(gpu, "link", LINK_PERIOD_S, lambda: self._link(gpu)) or (None, None)
        static = self._every(gpu, "static", STATIC_PERIOD_S, lambda: self._static(gpu)) or {}
        violations = (
            self._every(gpu, "violations", VIOLATION_PERIOD_S, lambda: self._violations(gpu)) or {}
        )
        migs = self._mig_instances(gpu, procs)
        rx, tx, counter_based = self._pcie_rates(gpu, fields, link)
        nvlinks: tuple[NvLinkSample, ...] = ()
        if gpu.nvlinks:
            nvlinks = self._every(gpu, "nvlink", NVLINK_PERIOD_S, lambda: self._nvlink(gpu)) or ()
        fabric = self._every(gpu, "fabric", FABRIC_PERIOD_S, lambda: self._fabric(gpu))
        nvlink_errors = [
            n
            for sample in nvlinks
            for n in (sample.crc_errors, sample.replay_errors, sample.recovery_errors)
            if n is not None
        ]

        used = int(memory.used) if memory is not None else None
        total = int(memory.total) if memory is not None else None
        if used is not None and total is not None and used > total:
            used = None  # a reading no card can give: unknown, not "over 100 %"
        mem_temp = fields.get(FI_MEMORY_TEMP)
        energy_mj = fields.get(FI_ENERGY)
        if energy_mj is None and FI_ENERGY not in gpu.fields:
            energy_mj = _clean(ask("energy", pynvml.nvmlDeviceGetTotalEnergyConsumption, h))
        limit_mw = fields.get(FI_POWER_LIMIT)
        if limit_mw is None:
            limit_mw = static.get("limit_mw")
        replay = fields.get(FI_REPLAY)
        if replay is None and FI_REPLAY not in gpu.fields:
            replay = slow.get("replay")
        pending = fields.get(FI_REMAPPED_PENDING)
        pstate = slow.get("pstate")
        return GpuSample(
            index=gpu.index,
            util_gpu=_percent(util.gpu) if util is not None else None,
            util_mem=_percent(util.memory) if util is not None else None,
            sm_activity=sm_activity,
            tensor_activity=tensor_activity,
            sm_clock_mhz=sm_clock,
            mem_clock_mhz=slow.get("mem_clock"),
            graphics_clock_mhz=slow.get("graphics_clock"),
            app_sm_clock_mhz=static.get("app_sm_clock"),
            temp_c=_celsius(temp),
            mem_temp_c=_celsius(mem_temp) if mem_temp else None,
            temp_margin_c=float(margin) if margin is not None and -100 < margin < 200 else None,
            fan_pct=_fan(slow.get("fan")),
            power_w=power_mw / 1000.0 if power_mw is not None else None,
            power_limit_w=limit_mw / 1000.0 if limit_mw else None,
            pstate=pstate if pstate is not None and pstate <= 15 else None,
            clock_reasons=int(reasons) if reasons is not None else None,
            mem_used=used,
            mem_free=int(memory.free) if memory is not None else None,
            mem_total=total,
            pcie_gen=link[0],
            pcie_width=link[1],
            pcie_rx_bps=rx,
            pcie_tx_bps=tx,
            pcie_replay_count=replay,
            ecc_volatile_corrected=fields.get(FI_ECC_SBE_VOL),
            ecc_volatile_uncorrected=fields.get(FI_ECC_DBE_VOL),
            remapped_rows_pending=bool(pending) if pending is not None else None,
            energy_j=energy_mj / 1000.0 if energy_mj is not None else None,
            util_samples=util_samples,
            xid_events=tuple(xids),
            pcie_counter_based=counter_based,
            mig_instances=migs,
            violation_power_s=violations.get("violation_power_s"),
            violation_thermal_s=violations.get("violation_thermal_s"),
            violation_board_s=violations.get("violation_board_s"),
            violation_reliability_s=violations.get("violation_reliability_s"),
            nvlinks=nvlinks,
            nvlink_errors=sum(nvlink_errors) if nvlink_errors else None,
            fabric_state=fabric,
        )

    # -- slower readings ---------------------------------------------------------
    def _slow(self, gpu: _Gpu) -> dict[str, int | None]:
        h = gpu.handle
        ask = functools.partial(self._ask, gpu)
        out: dict[str, int | None] = {
            "fan": _clean(ask("fan", pynvml.nvmlDeviceGetFanSpeed, h)),
            "pstate": _clean(ask("pstate", pynvml.nvmlDeviceGetPerformanceState, h)),
            "mem_clock": _clean(
                ask("mem_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM)
            ),
            "graphics_clock": _clean(
                ask("graphics_clock", pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_GRAPHICS)
            ),
        }
        if FI_REPLAY not in gpu.fields:
            out["replay"] = _clean(ask("replay", pynvml.nvmlDeviceGetPcieReplayCounter, h))
        return out

    def _nvlink(self, gpu: _Gpu) -> tuple[NvLinkSample, ...]:
        """Every link's state, error counters and throughput counters: one field batch."""
        ids = [(fid, link) for link in range(gpu.nvlinks) for fid in _NVLINK_FIELDS]
        values = self._ask(gpu, "nvlink_fields", _get_field_values, gpu, ids)
        if values is None:
            return ()
        got: dict[tuple[int, int], int] = {}
        for fid, scope, ret, kind, raw in field_rows(values):
            if ret != pynvml.NVML_SUCCESS:
                if meaning(ret) is Verdict.LOST:
                    raise _GpuLost
                continue
            number = field_unsigned(kind, raw)
            if number is not None:
                got[(fid, scope)] = number
        out = []
        for link in range(gpu.nvlinks):
            state = got.get((FI_NVLINK_STATE, link))
            tx, rx = got.get((FI_NVLINK_TX_KIB, link)), got.get((FI_NVLINK_RX_KIB, link))
            rates: tuple[float | None, float | None] = (None, None)
            previous = gpu.nvlink_last.get(link)
            gpu.nvlink_last[link] = (self._now, rx, tx)
            if previous is not None and self._now > previous[0]:
                elapsed = self._now - previous[0]
                rates = (
                    _kib_rate(previous[1], rx, elapsed),
                    _kib_rate(previous[2], tx, elapsed),
                )
            out.append(
                NvLinkSample(
                    link=link,
                    active=bool(state == 1) if state is not None else None,
                    rx_bps=rates[0],
                    tx_bps=rates[1],
                    crc_errors=got.get((FI_NVLINK_CRC, link)),
                    replay_errors=got.get((FI_NVLINK_REPLAY, link)),
                    recovery_errors=got.get((FI_NVLINK_RECOVERY, link)),
                )
            )
        return tuple(out)

    def _fabric(self, gpu: _Gpu) -> str | None:
        """The NVSwitch fabric state: the versioned call, else the first one."""
        return self._ask_first(  # type: ignore[no-any-return]
            gpu,
            "fabric",
            [
                (_fabric_reader("nvmlDeviceGetGpuFabricInfoV", _FabricInfoV2), (gpu.handle,)),
                (_fabric_reader("nvmlDeviceGetGpuFabricInfo", _FabricInfoV1), (gpu.handle,)),
            ],
        )

    def _link(self, gpu: _Gpu) -> tuple[int | None, int | None]:
        h = gpu.handle
        return (
            _clean(self._ask(gpu, "pcie_gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h)),
            _clean(self._ask(gpu, "pcie_width", pynvml.nvmlDeviceGetCurrPcieLinkWidth, h)),
        )

    def _static(self, gpu: _Gpu) -> dict[str, int | None]:
        """Settings that change only when someone changes them: asked for every 30 s."""
        h = gpu.handle
        out = {
            "app_sm_clock": _clean(
                self._ask(
                    gpu, "app_clock", pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_SM
                )
            )
        }
        if FI_POWER_LIMIT not in gpu.fields:
            out["limit_mw"] = _clean(
                self._ask(gpu, "limit", pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
            )
        return out

    def _violations(self, gpu: _Gpu) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        fn = pynvml.nvmlDeviceGetViolationStatus
        for name, policy in _VIOLATIONS:
            value = self._ask(gpu, name, fn, gpu.handle, policy)
            ns = _clean(int(value.violationTime)) if value is not None else None
            out[name] = ns / 1e9 if ns is not None else None
        return out

    def _util_samples(self, gpu: _Gpu) -> tuple[float, ...]:
        """The driver's GPU utilisation samples since the previous tick, oldest first: one
        call with a buffer sized beforehand (the bindings' wrapper makes two)."""
        if self._skip(gpu, "util_samples"):
            return ()
        try:
            fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetSamples")
        except pynvml.NVMLError:
            gpu.stopped.add("util_samples")
            return ()
        buffer = (_Sample * _SAMPLE_ROOM)()
        count = ctypes.c_uint(_SAMPLE_ROOM)
        value_type = ctypes.c_int(0)
        self._calls += 1
        ret = fn(
            gpu.handle,
            ctypes.c_int(_GPU_UTILIZATION_SAMPLES),
            ctypes.c_ulonglong(gpu.samples_seen or 0),
            ctypes.byref(value_type),
            ctypes.byref(count),
            buffer,
        )
        if ret == pynvml.NVML_ERROR_NOT_FOUND:
            return ()  # no sample since the last one seen
        if ret != pynvml.NVML_SUCCESS:
            self._failed(gpu, "util_samples", ret)
            return ()
        reader = _VALUE_READERS.get(
            value_type.value, _VALUE_READERS[pynvml.NVML_VALUE_TYPE_UNSIGNED_INT]
        )
        size = _SAMPLE_ROW.size * min(count.value, _SAMPLE_ROOM)
        entries = sorted(_SAMPLE_ROW.iter_unpack(memoryview(buffer).cast("B")[:size]))
        first = gpu.samples_seen is None
        if entries:
            gpu.samples_seen = max(gpu.samples_seen or 0, entries[-1][0])
        if first:
            return ()  # the driver's whole buffer, not "since the previous tick"
        out = []
        for _stamp, raw in entries:
            value = _percent(reader.unpack_from(raw)[0])
            if value is not None:
                out.append(value)
        return tuple(out)

    def _process_util(self, gpu: _Gpu, procs: list[tuple[str, _Proc]]) -> dict[int, float]:
        """PID -> SM % of the GPU's processes, read every ``PROCESS_UTIL_PERIOD_S`` while
        it has some (the last answer in between); {} where the driver gives no figure."""
        if not procs:
            return {}
        read = functools.partial(self._read_process_util, gpu)
        return self._every(gpu, "process_util", PROCESS_UTIL_PERIOD_S, read) or {}

    def _read_process_util(self, gpu: _Gpu) -> dict[int, float]:
        """The driver's per-process samples newer than the newest one seen (all it keeps,
        the first time), the newest per PID: one call with a buffer sized beforehand (the
        bindings' wrapper makes two). Not supported, no permission or a driver without the
        function leave {} under the one policy; NOT_FOUND is "no sample since then"."""
        key = "process_util"
        if self._skip(gpu, key):
            return {}
        try:
            fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetProcessUtilization")
        except pynvml.NVMLError:
            gpu.stopped.add(key)
            return {}
        room = gpu.process_util_room
        for _attempt in range(2):
            buffer = (pynvml.c_nvmlProcessUtilizationSample_t * room)()
            count = ctypes.c_uint(room)
            self._calls += 1
            ret = fn(
                gpu.handle,
                buffer,
                ctypes.byref(count),
                ctypes.c_ulonglong(gpu.process_util_seen),
            )
            if ret != pynvml.NVML_ERROR_INSUFFICIENT_SIZE or room >= _PROCESS_UTIL_MAX_ROOM:
                break
            # processes may start between the two calls
            room = min(_PROCESS_UTIL_MAX_ROOM, max(room * 2, count.value + 16))
            gpu.process_util_room = room
        if ret == pynvml.NVML_ERROR_NOT_FOUND:
            return {}  # no sample since the newest one seen
        if ret != pynvml.NVML_SUCCESS:
            self._failed(gpu, key, ret)
            return {}
        newest: dict[int, tuple[int, float | None]] = {}
        seen = gpu.process_util_seen
        for entry in buffer[: min(count.value, room)]:
            stamp = int(entry.timeStamp)
            seen = max(seen, stamp)
            pid = int(entry.pid)
            kept = newest.get(pid)
            if kept is None or stamp >= kept[0]:
                newest[pid] = (stamp, _percent(int(entry.smUtil)))
        gpu.process_util_seen = seen
        return {pid: value for pid, (_, value) in newest.items() if value is not None}

    # -- fields and PCIe -----------------------------------------------------------
    def _field_values(self, gpu: _Gpu, ids: Sequence[int], probe: bool = False) -> dict[int, int]:
        """Field id -> value for those that answered; at ``probe`` (open), also those that
        said no permission or unknown, which stay in the batch."""
        values = self._ask(gpu, "fields", _get_field_values, gpu, ids)
        out: dict[int, int] = {}
        if values is None:
            return out
        for fid, _scope, ret, kind, raw in field_rows(values):
            if ret != pynvml.NVML_SUCCESS:
                if meaning(ret) is Verdict.LOST:
                    raise _GpuLost
                if probe and meaning(ret) is Verdict.RETRY:
                    out[fid] = -1
                continue
            if fid in (FI_PCIE_TX_BYTES, FI_PCIE_RX_BYTES):
                gpu.counter_bits = value_bits(kind)
                number = field_unsigned(kind, raw)
            else:
                number = _field_number(kind, raw)
            if number is not None:
                out[fid] = number
            elif probe:
                out[fid] = -1
        return out

    def _pcie_rates(
        self, gpu: _Gpu, fields: dict[int, int], link: tuple[int | None, int | None]
    ) -> tuple[float | None, float | None, bool | None]:
        """PCIe RX/TX bytes/s: from the byte counters where the GPU has them (exact over the
        tick, free in the field batch), else the newest sampled window."""
        if gpu.counters:
            rates = self._counter_rates(gpu, fields, link)
            if rates is not None:
                return rates[0], rates[1], True
            if gpu.counter_bits == 64:
                return None, None, None
            # 32-bit counters on a link that can wrap them more than once a tick
            self._want_window(gpu)
        elif self._fallback_throughput and "throughput" not in gpu.stopped:
            self._want_window(gpu)
        window = gpu.window
        if window is None or self._now - window[0] > THROUGHPUT_STALE_S:
            return None, None, None
        return window[1], window[2], False

    def _counter_rates(
        self, gpu: _Gpu, fields: dict[int, int], link: tuple[int | None, int | None]
    ) -> tuple[float, float] | None:
        rx_total = fields.get(FI_PCIE_RX_BYTES)
        tx_total = fields.get(FI_PCIE_TX_BYTES)
        if rx_total is None or tx_total is None:
            return None  # one missing reading: no rate now, the baseline stays
        previous = gpu.last_counters
        gpu.last_counters = (self._now, rx_total, tx_total)
        if previous is None or self._now <= previous[0]:
            return None
        elapsed = self._now - previous[0]
        modulus = 1 << gpu.counter_bits
        rx_bytes = (rx_total - previous[1]) % modulus
        tx_bytes = (tx_total - previous[2]) % modulus
        # the most the link can carry: its maximum, since it retrains between readings
        capacity = link_bandwidth(gpu.max_link[0] or link[0], gpu.max_link[1] or link[1])
        if gpu.counter_bits < 64 and (capacity is None or capacity * elapsed >= modulus):
            return None  # the counter may have wrapped more than once: no telling
        ceiling = (capacity or 4 * 121.0e9) * elapsed * 1.5
        if rx_bytes > ceiling or tx_bytes > ceiling:
            return None  # a reset (driver reload), not traffic
        return rx_bytes / elapsed, tx_bytes / elapsed

    def wait_windows(self, timeout: float = 2.0) -> None:
        """Wait until the PCIe throughput windows in flight are done (tests and the real-GPU
        check; the app never waits: a tick uses the newest finished window)."""
        futures = [g.window_future for g in self._gpus if g.window_future is not None]
        deadline = time.monotonic() + timeout
        for future in futures:
            with contextlib.suppress(Exception):
                future.result(timeout=max(0.0, deadline - time.monotonic()))

    def _want_window(self, gpu: _Gpu) -> None:
        gpu.cache["want_window"] = True

    def _harvest_windows(self) -> None:
        for gpu in self._gpus:
            future = gpu.window_future
            if future is None or not future.done():
                continue
            gpu.window_future = None
            try:
                rx, tx, code = future.result()
            except Exception:  # a worker's failure loses that window, nothing else
                continue
            if code is not None:
                verdict = meaning(code)
                if verdict is Verdict.STOP:
                    gpu.stopped.add("throughput")
                elif verdict is Verdict.RETRY:
                    gpu.read_at["throughput"] = self._now + RETRY_AFTER_S - THROUGHPUT_PERIOD_S
                continue  # a lost GPU shows on the tick's own calls
            gpu.window = (self._now, rx, tx)

    def _start_windows(self) -> None:
        """Start a 20 ms window on every GPU that wants one and is due, in parallel."""
        for gpu in self._gpus:
            if gpu.lost or not gpu.cache.pop("want_window", False):
                continue
            if gpu.window_future is not None or not self._due(
                gpu, "throughput", THROUGHPUT_PERIOD_S
            ):
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=max(1, min(8, len(self._gpus))), thread_name_prefix="gputui-pcie"
                )
            self.last_calls[gpu.index] = self.last_calls.get(gpu.index, 0) + 2
            gpu.window_future = self._pool.submit(_throughput_window, gpu.handle)

    # -- events ------------------------------------------------------------------
    def _poll_events(self, now: float) -> dict[int, list[XidEvent]]:
        """Xid errors since the previous tick: the event set drained without waiting."""
        out: dict[int, list[XidEvent]] = {}
        if self._event_set is None or self._now < self._system.retry_at.get("events", 0.0):
            return out
        for _ in range(MAX_EVENTS_PER_READ):
            try:
                data = pynvml.nvmlEventSetWait_v2(self._event_set, 0)
            except pynvml.NVMLError as exc:
                code = _error_code(exc)
                if code != _TIMEOUT:  # anything but "nothing waiting"
                    if meaning(code) is Verdict.STOP:
                        with contextlib.suppress(pynvml.NVMLError):
                            pynvml.nvmlEventSetFree(self._event_set)
                        self._event_set = None
                    else:
                        self._system.retry_at["events"] = self._now + RETRY_AFTER_S
                break
            gpu = self._by_handle.get(_handle_key(data.device) or -1)
            if gpu is not None and int(data.eventType) & _XID_EVENT:
                out.setdefault(gpu.index, []).append(XidEvent(code=int(data.eventData), time=now))
        return out

    # -- GPM -----------------------------------------------------------------------
    def _gpm(self, gpu: _Gpu) -> tuple[float | None, float | None]:
        """SM and tensor activity from GPM (Hopper+) over the last GPM period: two samples
        allocated at open, used in turn, freed at close whatever happens in between."""
        if not gpu.gpm or len(gpu.gpm_samples) != 2:
            return None, None
        values = self._gpm_metrics(
            gpu, gpu, "gpm", lambda s: pynvml.nvmlGpmSampleGet(gpu.handle, s)
        )
        return values

    def _gpm_metrics(
        self, gpu: _Gpu, state: _Gpu | _Mig, key: str, take: Callable[[Any], Any]
    ) -> tuple[float | None, float | None]:
        current = state.gpm_samples[state.gpm_current]
        previous = state.gpm_samples[1 - state.gpm_current]
        if self._ask(gpu, key, take, current) is None:
            state.gpm_have_previous = False
            if key in gpu.stopped:
                self._free_gpm(state.gpm_samples)
            return None, None
        had_previous, state.gpm_have_previous = state.gpm_have_previous, True
        state.gpm_current = 1 - state.gpm_current
        if not had_previous:
            return None, None
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = 2
        request.sample1 = previous
        request.sample2 = current
        request.metrics[0].metricId = _GPM_SM_UTIL
        request.metrics[1].metricId = _GPM_ANY_TENSOR_UTIL
        if self._ask(gpu, key + ".metrics", pynvml.nvmlGpmMetricsGet, request) is None:
            return None, None
        sm, tensor = (
            _percent(request.metrics[i].value) if request.metrics[i].nvmlReturn == 0 else None
            for i in range(2)
        )
        return sm, tensor

    # -- MIG -------------------------------------------------------------------------
    def _mig_layout(self, gpu: _Gpu) -> list[_Mig]:
        """The GPU's MIG instances: no root needed, nothing changed."""
        for mig in gpu.migs:
            self._free_gpm(mig.gpm_samples)
        h = gpu.handle
        count = _clean(self._ask(gpu, "mig_count", pynvml.nvmlDeviceGetMaxMigDeviceCount, h))
        out: list[_Mig] = []
        for i in range(count or 0):
            self._calls += 1
            try:
                mh = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, i)
            except pynvml.NVMLError as exc:
                if meaning(_error_code(exc)) is Verdict.LOST:
                    raise _GpuLost from exc
                continue  # an empty slot
            key = f"mig{i}"
            gi = self._ask(gpu, key + ".gi", pynvml.nvmlDeviceGetGpuInstanceId, mh)
            if gi is None:
                continue
            ci = self._ask(gpu, key + ".ci", pynvml.nvmlDeviceGetComputeInstanceId, mh)
            name = self._ask(gpu, key + ".name", pynvml.nvmlDeviceGetName, mh)
            uuid = self._ask(gpu, key + ".uuid", pynvml.nvmlDeviceGetUUID, mh)
            mig = _Mig(
                handle=mh,
                gpu_instance=int(gi),
                compute_instance=int(ci) if ci is not None else None,
                profile=_mig_profile(_text(name)) if name is not None else None,
                uuid=_text(uuid) if uuid is not None else None,
            )
            if gpu.gpm and _function("nvmlGpmMigSampleGet") is not None:
                try:
                    for _ in range(2):
                        self._calls += 1
                        mig.gpm_samples.append(pynvml.nvmlGpmSampleAlloc())
                except pynvml.NVMLError:
                    self._free_gpm(mig.gpm_samples)
            out.append(mig)
        return out

    def _mig_gpm(self, gpu: _Gpu, mig: _Mig, key: str) -> tuple[float | None, float | None]:
        def take(sample: Any) -> Any:
            return pynvml.nvmlGpmMigSampleGet(gpu.handle, mig.gpu_instance, sample)

        return self._gpm_metrics(gpu, mig, key + ".gpm", take)

    def _mig_instances(self, gpu: _Gpu, procs: list[tuple[str, _Proc]]) -> tuple[MigInstance, ...]:
        if not gpu.mig:
            return ()
        if self._due(gpu, "mig_layout", STATIC_PERIOD_S):
            mode = self._ask(gpu, "mig_mode", pynvml.nvmlDeviceGetMigMode, gpu.handle)
            if mode is not None and not mode[0]:
                gpu.mig = False
                self._drop_migs(gpu)
                return ()
            self._drop_migs(gpu)  # the layout is read anew: free the old instances' samples
            gpu.migs = self._mig_layout(gpu)
        by_instance: dict[int, list[int]] = {}
        for _, proc in procs:
            if proc.gpu_instance is not None:
                by_instance.setdefault(proc.gpu_instance, []).append(proc.pid)
        out = []
        for i, mig in enumerate(gpu.migs):
            key = f"mig{i}"
            memory = self._every(
                gpu,
                key + ".memory",
                MIG_PERIOD_S,
                functools.partial(self._memory, gpu, mig.handle, key + ".mem"),
            )
            sm = None
            if len(mig.gpm_samples) == 2:
                activity = self._every(
                    gpu, key + ".gpm", GPM_PERIOD_S, functools.partial(self._mig_gpm, gpu, mig, key)
                )
                sm = activity[0] if activity is not None else None
            out.append(
                MigInstance(
                    gpu_instance_id=mig.gpu_instance,
                    compute_instance_id=mig.compute_instance,
                    profile=mig.profile,
                    uuid=mig.uuid,
                    mem_used=int(memory.used) if memory is not None else None,
                    mem_total=int(memory.total) if memory is not None else None,
                    sm_activity=sm,
                    pids=tuple(sorted(set(by_instance.get(mig.gpu_instance, ())))),
                )
            )
        return tuple(out)

    # -- processes -------------------------------------------------------------------
    def _processes(self, gpu: _Gpu) -> list[tuple[str, _Proc]]:
        """(kind, process) on this GPU: compute every tick; graphics and MPS clients every
        tick while there are some, else every ``PROCESS_EXTRA_PERIOD_S``."""
        found: dict[int, tuple[str, _Proc]] = {}
        for kind, _ in _PROCESS_KINDS:
            if (
                kind != "compute"
                and not gpu.process_seen.get(kind)
                and not self._due(gpu, "procs." + kind, PROCESS_EXTRA_PERIOD_S)
            ):
                for proc in gpu.cache.get("procs." + kind, ()):
                    self._merge(found, kind, proc)
                continue
            listed = self._process_list(gpu, kind) or []
            gpu.process_seen[kind] = bool(listed)
            gpu.cache["procs." + kind] = listed
            for proc in listed:
                self._merge(found, kind, proc)
        return list(found.values())

    @staticmethod
    def _merge(found: dict[int, tuple[str, _Proc]], kind: str, proc: _Proc) -> None:
        """One entry per PID; its kind names every list it is on ("compute+graphics")."""
        existing = found.get(proc.pid)
        if existing is None:
            found[proc.pid] = (kind, proc)
            return
        old_kind, old = existing
        kinds = {*old_kind.split("+"), kind}
        merged = "+".join(k for k, _ in _PROCESS_KINDS if k in kinds)
        memory = old.memory if old.memory is not None else proc.memory
        found[proc.pid] = (
            merged,
            _Proc(proc.pid, memory, old.gpu_instance, old.compute_instance),
        )

    def _process_list(self, gpu: _Gpu, kind: str) -> list[_Proc] | None:
        """The processes of one kind, through the newest process function the driver has,
        called with this module's own entry structs in the layout that driver writes.

        The layout is resolved at open (R535's 32-byte _v3 entries; see
        ``r535_process_layout``) and checked on every answer: a PID that no process can
        have makes the other layout be tried on the same buffer, and kept if it reads
        right."""
        candidates = gpu.process_fns.get(kind) or []
        key = "procs." + kind
        while candidates and not self._skip(gpu, key):
            symbol, size = candidates[0]
            try:
                fn = pynvml._nvmlGetFunctionPointer(symbol)
            except pynvml.NVMLError:
                candidates.pop(0)
                continue
            room = gpu.process_room.get(kind, 8)
            for _attempt in range(2):
                buffer = (ctypes.c_ubyte * (room * _ENTRY_R535))()  # room for any layout
                count = ctypes.c_uint(room)
                self._calls += 1
                ret = fn(gpu.handle, ctypes.byref(count), buffer)
                if ret != pynvml.NVML_ERROR_INSUFFICIENT_SIZE:
                    break
                room = count.value * 2 + 8  # processes may start between the two calls
            gpu.process_room[kind] = max(8, min(room, count.value * 2 + 8))
            if ret == pynvml.NVML_SUCCESS:
                n = min(count.value, room)
                procs = _parse_processes(buffer, size, n, gpu.memory_total)
                if procs is None and size in (_ENTRY_V2, _ENTRY_R535) and symbol.endswith("_v3"):
                    other = _ENTRY_R535 if size == _ENTRY_V2 else _ENTRY_V2
                    procs = _parse_processes(buffer, other, n, gpu.memory_total)
                    if procs is not None:
                        candidates[0] = (symbol, other)
                if procs is None:  # no layout reads right: keep what is plausible
                    procs = _parse_processes(buffer, size, n, gpu.memory_total, strict=False)
                return procs
            verdict = meaning(ret)
            if verdict is Verdict.LOST:
                raise _GpuLost
            if verdict is Verdict.STOP:
                candidates.pop(0)  # an older version of the function, or none
                continue
            self._failed(gpu, key, ret)
            return None
        return None


def cpu_list(cpus: Sequence[int]) -> str:
    """CPU numbers in Linux list format: [0, 1, 2, 5] -> "0-2,5"."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def _kib_rate(before: int | None, after: int | None, elapsed: float) -> float | None:
    if before is None or after is None or after < before:
        return None  # a counter reset (driver reload) is not traffic
    return (after - before) * 1024 / elapsed


class _FabricInfoV1(ctypes.Structure):
    """nvmlGpuFabricInfo_t as nvml.h lays it out (the oldest bindings declare it wrong)."""

    _fields_ = [
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),
    ]


class _FabricInfoV2(ctypes.Structure):
    """nvmlGpuFabricInfo_v2_t, what nvmlDeviceGetGpuFabricInfoV fills (36 bytes)."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),
        ("healthMask", ctypes.c_uint),
    ]


def _fabric_reader(symbol: str, struct: type[ctypes.Structure]) -> Callable[[Any], str]:
    """A call of ``symbol`` with gputui's own struct: the state in words."""

    def read(handle: Any) -> str:
        fn = pynvml._nvmlGetFunctionPointer(symbol)  # raises FUNCTION_NOT_FOUND: next one
        info: Any = struct()
        if hasattr(info, "version"):
            info.version = ctypes.sizeof(struct) | (2 << 24)
        ret = fn(handle, ctypes.byref(info))
        if ret != pynvml.NVML_SUCCESS:
            raise pynvml.NVMLError(ret)
        state = _FABRIC_STATES.get(int(info.state), "none")
        if state == "completed" and int(info.status) != pynvml.NVML_SUCCESS:
            return "failed"
        return state

    return read


def _throughput_window(handle: Any) -> tuple[float | None, float | None, int | None]:
    """RX and TX bytes/s over one 20 ms window each (runs on the pool, off the tick)."""
    out: list[float | None] = []
    for counter in (pynvml.NVML_PCIE_UTIL_RX_BYTES, pynvml.NVML_PCIE_UTIL_TX_BYTES):
        try:
            kib = _clean(pynvml.nvmlDeviceGetPcieThroughput(handle, counter))
        except pynvml.NVMLError as exc:
            return None, None, _error_code(exc)
        out.append(kib * _THROUGHPUT_UNIT if kib is not None else None)
    return out[0], out[1], None


def _parse_processes(
    buffer: Any, size: int, count: int, memory_total: int | None, strict: bool = True
) -> list[_Proc] | None:
    """Entries of ``size`` bytes; None (when ``strict``) if any PID is implausible."""
    struct = _ENTRY_STRUCTS[size]
    if count * size > ctypes.sizeof(buffer):
        return None
    entries = ctypes.cast(buffer, ctypes.POINTER(struct))
    out = []
    for i in range(count):
        entry = entries[i]
        pid = int(entry.pid)
        memory = _clean(int(entry.usedGpuMemory))
        plausible = 0 < pid <= _PID_MAX and (
            memory is None or memory_total is None or memory <= memory_total
        )
        if not plausible:
            if strict:
                return None
            continue
        gi = ci = None
        if size != ctypes.sizeof(_ProcessInfoV1):
            gi = int(entry.gpuInstanceId)
            ci = int(entry.computeInstanceId)
        out.append(
            _Proc(
                pid,
                memory,
                gi if gi != _NO_INSTANCE else None,
                ci if ci != _NO_INSTANCE else None,
            )
        )
    return out


def _mig_profile(name: str) -> str:
    """'NVIDIA A100-SXM4-40GB MIG 1g.5gb' -> '1g.5gb', as nvidia-smi shows it."""
    _, sep, profile = name.rpartition(" MIG ")
    return profile.strip() if sep else name


# nvmlValue_t is a union: which member holds the reading depends on its valueType.
# Each member is read from the union's bytes (each starts at its first byte).
_VALUE_READERS = {
    pynvml.NVML_VALUE_TYPE_DOUBLE: struct.Struct("@d"),
    pynvml.NVML_VALUE_TYPE_UNSIGNED_INT: struct.Struct("@I"),
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG: struct.Struct("@L"),
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: struct.Struct("@Q"),
    pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: struct.Struct("@q"),
    pynvml.NVML_VALUE_TYPE_SIGNED_INT: struct.Struct("@i"),
}
# One nvmlFieldValue_t as nvml.h lays it out: fieldId, scopeId, timestamp, latencyUsec,
# valueType, nvmlReturn, the value union's 8 bytes. A batch is decoded in one pass over
# its bytes instead of a Python attribute lookup per member.
_FIELD_ROW = struct.Struct("=IIqqII8s")
# One nvmlSample_t: the timestamp (µs) and the value union's 8 bytes.
_SAMPLE_ROW = struct.Struct("=Q8s")


def _plain(bindings: type[ctypes.Structure]) -> type[ctypes.Structure]:
    """One of the bindings' structures laid out the same, without their printable base's
    Python ``__getattribute__`` / ``__setattr__`` on every member read and write."""
    fields = {"_fields_": bindings._fields_}
    return type("_Plain" + bindings.__name__, (ctypes.Structure,), fields)


_FieldValue = _plain(pynvml.c_nvmlFieldValue_t)  # a tick reads some fifty of its members


def _get_field_values(gpu: _Gpu, ids: Sequence[int | tuple[int, int]]) -> Any:
    """nvmlDeviceGetFieldValues into an array built once per GPU and list of ids (field, or
    field and scope). The bindings' wrapper builds a new array and sets each id through
    its structures' Python ``__setattr__`` on every call: a third of a tick's NVML time."""
    key = tuple(ids)
    values = gpu.field_arrays.get(key)
    if values is None:
        values = (_FieldValue * len(key))()
        for entry, fid in zip(values, key, strict=True):
            if isinstance(fid, tuple):
                entry.fieldId, entry.scopeId = fid
            else:
                entry.fieldId = fid
        gpu.field_arrays[key] = values
    fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")
    ret = fn(gpu.handle, ctypes.c_int32(len(key)), ctypes.byref(values))
    if ret != pynvml.NVML_SUCCESS:
        raise pynvml.NVMLError(ret)
    return values


def field_rows(values: Any) -> list[tuple[int, int, int, int, bytes]]:
    """(field id, scope id, return code, value type, the value's bytes) of each entry of
    an nvmlFieldValue_t array (this module's or the bindings')."""
    return [
        (fid, scope, ret, kind, raw)
        for fid, scope, _stamp, _latency, kind, ret, raw in _FIELD_ROW.iter_unpack(values)
    ]


def _read_struct(
    symbol: str, layout: type[ctypes.Structure], handle: Any, *first: Any, **preset: int
) -> Any:
    """``symbol(handle, *first, &out)`` into a new ``layout`` with ``preset`` members set
    (a version); NVMLError as the bindings raise it, FunctionNotFound included."""
    fn = pynvml._nvmlGetFunctionPointer(symbol)
    out = layout(**preset)
    ret = fn(handle, *first, ctypes.byref(out))
    if ret != pynvml.NVML_SUCCESS:
        raise pynvml.NVMLError(ret)
    return out


_UTILIZATION = _plain(pynvml.c_nvmlUtilization_t)
_MEMORY_V1 = _plain(pynvml.c_nvmlMemory_t)
_BINDINGS_MEMORY_V2 = getattr(pynvml, "c_nvmlMemory_v2_t", None)
_MEMORY_V2 = _plain(_BINDINGS_MEMORY_V2) if _BINDINGS_MEMORY_V2 is not None else None
# bindings from 12.570 on: the versioned temperature call, its wrapper and structure
_BINDINGS_TEMPERATURE_V1 = getattr(pynvml, "c_nvmlTemperature_v1_t", None)
_TEMPERATURE_V1 = (
    _plain(_BINDINGS_TEMPERATURE_V1)
    if _BINDINGS_TEMPERATURE_V1 is not None and _function("nvmlDeviceGetTemperatureV")
    else None
)


def _utilization(handle: Any) -> Any:
    return _read_struct("nvmlDeviceGetUtilizationRates", _UTILIZATION, handle)


def _memory_v1(handle: Any) -> Any:
    return _read_struct("nvmlDeviceGetMemoryInfo", _MEMORY_V1, handle)


def _memory_v2(handle: Any) -> Any:
    version = getattr(pynvml, "nvmlMemory_v2", None)
    if _MEMORY_V2 is None or version is None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # bindings before it
    return _read_struct("nvmlDeviceGetMemoryInfo_v2", _MEMORY_V2, handle, version=version)


def _temperature_v(handle: Any, sensor: int) -> int:
    version = getattr(pynvml, "nvmlTemperature_v1", None)
    if _TEMPERATURE_V1 is None or version is None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # bindings before it
    out = _read_struct(
        "nvmlDeviceGetTemperatureV", _TEMPERATURE_V1, handle, version=version, sensorType=sensor
    )
    return int(out.temperature)


def _field_number(kind: int, raw: bytes) -> int | None:
    """A field's reading as a non-negative whole number; None for no reading."""
    reader = _VALUE_READERS.get(kind)
    if reader is None:
        return None
    value: float | int = reader.unpack_from(raw)[0]
    if value != value or value < 0 or value == float("inf"):  # NaN, negative, infinite
        return None
    return _clean(int(value))


def field_unsigned(kind: int, raw: bytes) -> int | None:
    """A counter's raw value: an all-ones 32-bit counter is a value on its way to wrapping,
    not a sentinel."""
    reader = _VALUE_READERS.get(kind)
    if reader is None or kind == pynvml.NVML_VALUE_TYPE_DOUBLE:
        return None
    value: int = reader.unpack_from(raw)[0]
    return value if value >= 0 else None


def value_bits(kind: int) -> int:
    """How wide a counter is, from the union member the driver filled."""
    if kind in (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, pynvml.NVML_VALUE_TYPE_SIGNED_INT):
        return 32
    if kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG:
        return 8 * ctypes.sizeof(ctypes.c_ulong)
    return 64


def _celsius(value: int | None) -> float | None:
    """A GPU temperature, or None for sentinels (-1, 0, 0xFFFFFFFF) and impossible values."""
    if value is None or not 0 < value <= 150:
        return None
    return float(value)


def _percent(value: float | int | None) -> float | None:
    if value is None or value in _SENTINELS:
        return None
    value = float(value)
    if value != value or value < 0 or value > 100:
        return None
    return value


def _fan(value: int | None) -> float | None:
    """Fan speed in % of the fan's rated maximum: some boards run above 100 % for real."""
    if value is None or value in _SENTINELS or not 0 <= value <= 255:
        return None
    return float(value)


def _cuda_version(value: Any) -> str | None:
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _init_failure(exc: BaseException) -> str:
    code = _error_code(exc)
    if code in (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED):
        return (
            "No NVIDIA driver found on this machine (libnvidia-ml.so.1 could not be loaded), "
            "so there are no GPUs to read; run `gputui --demo` to see gputui on a simulated node."
        )
    if code == pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return (
            "The NVIDIA driver's library and kernel module are different versions "
            "(driver updated without a reboot?); reload the nvidia module or reboot, "
            "or run `gputui --demo`."
        )
    if code == pynvml.NVML_ERROR_NO_PERMISSION:
        return (
            "Not allowed to open the NVIDIA devices (/dev/nvidia*): check your group "
            "membership or container device mounts, or run `gputui --demo`."
        )
    return f"NVML failed to start ({exc}); run `gputui --demo` to see a simulated node."
