"""What nvidia-ml-py and nvml.h give, and how gputui reads it whatever their version.

pyproject allows nvidia-ml-py>=12.535. The oldest such release, 12.535.77, lacks
NVML_ERROR_GPU_NOT_FOUND and NVMLLibraryMismatchError (added in 12.550), the _v2 process
wrappers (12.550), NVML_FI_DEV_PCIE_COUNT_{TX,RX}_BYTES (12.555),
NVML_DEVICE_ARCH_BLACKWELL (12.560), nvmlDeviceGetTemperatureV and
nvmlDeviceGetMarginTemperature (12.570). Every binding name that is not in every release
from 12.535.77 on is read through ``constant``, ``function`` or ``exception``, never as
``pynvml.NAME``. Structures are gputui's own where the bindings' are wrong or slow, and raw
answers (field values, samples) are decoded from their bytes in one pass.
"""

from __future__ import annotations

import ctypes
import functools
import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

import pynvml


def constant(name: str, value: int) -> int:
    """The bindings' constant ``name``, or ``value`` (what nvml.h defines) where they lack it."""
    found = getattr(pynvml, name, value)
    return found if isinstance(found, int) else value


def function(name: str) -> Callable[..., Any] | None:
    """The bindings' wrapper ``name``, or None where they lack it: the caller reads that as
    "not supported", as it does when the driver lacks the function."""
    fn = getattr(pynvml, name, None)
    return fn if callable(fn) else None


class _NeverRaised(Exception):
    """Stands in for an exception class the loaded bindings do not define."""


def exception(name: str) -> type[Exception]:
    """The bindings' exception class ``name``, or one that nothing raises."""
    found = getattr(pynvml, name, None)
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return _NeverRaised


# What 12.550+ raises from an unversioned wrapper whose symbol the driver lacks.
LIBRARY_MISMATCH = exception("NVMLLibraryMismatchError")


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


ARCHITECTURES = {
    pynvml.NVML_DEVICE_ARCH_KEPLER: "Kepler",
    pynvml.NVML_DEVICE_ARCH_MAXWELL: "Maxwell",
    pynvml.NVML_DEVICE_ARCH_PASCAL: "Pascal",
    pynvml.NVML_DEVICE_ARCH_VOLTA: "Volta",
    pynvml.NVML_DEVICE_ARCH_TURING: "Turing",
    pynvml.NVML_DEVICE_ARCH_AMPERE: "Ampere",
    pynvml.NVML_DEVICE_ARCH_ADA: "Ada",
    pynvml.NVML_DEVICE_ARCH_HOPPER: "Hopper",
    constant("NVML_DEVICE_ARCH_BLACKWELL", 10): "Blackwell",
}

COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

# Field ids (nvml.h), read in one nvmlDeviceGetFieldValues call per GPU per tick; the ones
# a GPU does not answer when it is opened are left out of its batch.
FI_ECC_SBE_VOL = 3  # NVML_FI_DEV_ECC_SBE_VOL_TOTAL
FI_ECC_DBE_VOL = 4  # NVML_FI_DEV_ECC_DBE_VOL_TOTAL
FI_ECC_DBE_AGG = 6  # NVML_FI_DEV_ECC_DBE_AGG_TOTAL: over the board's life
FI_RETIRED_SBE = 29  # NVML_FI_DEV_RETIRED_SBE: pages retired (before Ampere)
FI_RETIRED_DBE = 30  # NVML_FI_DEV_RETIRED_DBE
FI_RETIRED_PENDING = 31  # NVML_FI_DEV_RETIRED_PENDING: 1 until the next reset
FI_MEMORY_TEMP = 82  # NVML_FI_DEV_MEMORY_TEMP
FI_ENERGY = 83  # NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
FI_REPLAY = 94  # NVML_FI_DEV_PCIE_REPLAY_COUNTER
FI_REMAPPED_COR = 142  # NVML_FI_DEV_REMAPPED_COR: rows remapped (Ampere+)
FI_REMAPPED_UNC = 143  # NVML_FI_DEV_REMAPPED_UNC
FI_REMAPPED_PENDING = 144  # NVML_FI_DEV_REMAPPED_PENDING
FI_REMAPPED_FAILURE = 145  # NVML_FI_DEV_REMAPPED_FAILURE: no spare row was left
FI_POWER_LIMIT = 190  # NVML_FI_DEV_POWER_CURRENT_LIMIT, mW
FI_PCIE_TX_BYTES = constant("NVML_FI_DEV_PCIE_COUNT_TX_BYTES", 197)  # cumulative, R555+
FI_PCIE_RX_BYTES = constant("NVML_FI_DEV_PCIE_COUNT_RX_BYTES", 198)  # cumulative, R555+
CANDIDATE_FIELDS = (
    FI_REPLAY,
    FI_ECC_SBE_VOL,
    FI_ECC_DBE_VOL,
    FI_ECC_DBE_AGG,
    FI_RETIRED_SBE,
    FI_RETIRED_DBE,
    FI_RETIRED_PENDING,
    FI_REMAPPED_COR,
    FI_REMAPPED_UNC,
    FI_REMAPPED_PENDING,
    FI_REMAPPED_FAILURE,
    FI_PCIE_TX_BYTES,
    FI_PCIE_RX_BYTES,
    FI_MEMORY_TEMP,
    FI_ENERGY,
    FI_POWER_LIMIT,
)
#: the model field each plain field id fills (the counters, energy and limit have their
#: own paths and fallbacks)
FIELD_READINGS = {
    FI_MEMORY_TEMP: "mem_temp_c",
    FI_ECC_SBE_VOL: "ecc_volatile_corrected",
    FI_ECC_DBE_VOL: "ecc_volatile_uncorrected",
    FI_ECC_DBE_AGG: "ecc_aggregate_uncorrected",
    FI_RETIRED_SBE: "retired_pages_sbe",
    FI_RETIRED_DBE: "retired_pages_dbe",
    FI_RETIRED_PENDING: "retired_pages_pending",
    FI_REMAPPED_COR: "remapped_rows_corrected",
    FI_REMAPPED_UNC: "remapped_rows_uncorrected",
    FI_REMAPPED_PENDING: "remapped_rows_pending",
    FI_REMAPPED_FAILURE: "remapped_rows_failure",
}

# NVLink fields, asked per link (scopeId = the link) in one batch
FI_NVLINK_TX_KIB = 138  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, cumulative KiB
FI_NVLINK_RX_KIB = 139  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
FI_NVLINK_REPLAY = 161  # NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY
FI_NVLINK_RECOVERY = 162  # NVML_FI_DEV_NVLINK_ERROR_DL_RECOVERY
FI_NVLINK_CRC = 163  # NVML_FI_DEV_NVLINK_ERROR_DL_CRC
FI_NVLINK_STATE = 165  # NVML_FI_DEV_NVLINK_GET_STATE, 1 active
NVLINK_FIELDS = (
    FI_NVLINK_STATE,
    FI_NVLINK_CRC,
    FI_NVLINK_REPLAY,
    FI_NVLINK_RECOVERY,
    FI_NVLINK_TX_KIB,
    FI_NVLINK_RX_KIB,
)
# nvmlDeviceGetTopologyCommonAncestor's levels as `nvidia-smi topo -m` abbreviates them
TOPOLOGY_LEVELS = {0: "BRD", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
AFFINITY_SCOPE_NODE = 0  # NVML_AFFINITY_SCOPE_NODE
FABRIC_STATES = {0: "none", 1: "not-started", 2: "in-progress", 3: "completed"}

GPM_SM_UTIL = 2  # NVML_GPM_METRIC_SM_UTIL
GPM_ANY_TENSOR_UTIL = 5  # NVML_GPM_METRIC_ANY_TENSOR_UTIL

THROUGHPUT_UNIT = 1024  # nvmlDeviceGetPcieThroughput reports KiB/s
GPU_UTILIZATION_SAMPLES = 1  # NVML_GPU_UTILIZATION_SAMPLES
XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
# (model field, NVML_PERF_POLICY_*): cumulative ns spent held down by each cause
VIOLATIONS = (
    ("violation_power_s", 0),  # NVML_PERF_POLICY_POWER
    ("violation_thermal_s", 1),  # NVML_PERF_POLICY_THERMAL
    ("violation_board_s", 3),  # NVML_PERF_POLICY_BOARD_LIMIT
    ("violation_reliability_s", 5),  # NVML_PERF_POLICY_RELIABILITY
)


# -- structures ------------------------------------------------------------------------
class Sample(ctypes.Structure):
    """nvmlSample_t: a timestamp (µs) and a value union."""

    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", pynvml.c_nvmlValue_t)]


class FabricInfoV1(ctypes.Structure):
    """nvmlGpuFabricInfo_t as nvml.h lays it out (the oldest bindings declare it wrong)."""

    _fields_ = [
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),
    ]


class FabricInfoV2(ctypes.Structure):
    """nvmlGpuFabricInfo_v2_t, what nvmlDeviceGetGpuFabricInfoV fills (36 bytes)."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("clusterUuid", ctypes.c_ubyte * 16),
        ("status", ctypes.c_uint),
        ("cliqueId", ctypes.c_uint),
        ("state", ctypes.c_ubyte),
        ("healthMask", ctypes.c_uint),
    ]


class FanSpeedInfo(ctypes.Structure):
    """nvmlFanSpeedInfo_t (R535+): a fan's number in, its speed in RPM out (bindings
    before 12.550 lack the call's wrapper)."""

    _fields_ = [("version", ctypes.c_uint), ("fan", ctypes.c_uint), ("speed", ctypes.c_uint)]


def _plain(bindings: type[ctypes.Structure]) -> type[ctypes.Structure]:
    """One of the bindings' structures laid out the same, without their printable base's
    Python ``__getattribute__`` / ``__setattr__`` on every member read and write."""
    fields = {"_fields_": bindings._fields_}
    return type("_Plain" + bindings.__name__, (ctypes.Structure,), fields)


FieldValue = _plain(pynvml.c_nvmlFieldValue_t)  # a tick reads some fifty of its members
_UTILIZATION = _plain(pynvml.c_nvmlUtilization_t)
_MEMORY_V1 = _plain(pynvml.c_nvmlMemory_t)
_BINDINGS_MEMORY_V2 = getattr(pynvml, "c_nvmlMemory_v2_t", None)
_MEMORY_V2 = _plain(_BINDINGS_MEMORY_V2) if _BINDINGS_MEMORY_V2 is not None else None
# bindings from 12.570 on: the versioned temperature call, its wrapper and structure
_BINDINGS_TEMPERATURE_V1 = getattr(pynvml, "c_nvmlTemperature_v1_t", None)
_TEMPERATURE_V1 = (
    _plain(_BINDINGS_TEMPERATURE_V1)
    if _BINDINGS_TEMPERATURE_V1 is not None and function("nvmlDeviceGetTemperatureV")
    else None
)
#: whether these bindings know the v2 memory struct (from 12.535 on)
MEMORY_V2 = _MEMORY_V2 is not None
#: whether these bindings know the versioned temperature call (from 12.570 on)
TEMPERATURE_V = _TEMPERATURE_V1 is not None


def read_struct(
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


def utilization(handle: Any) -> Any:
    return read_struct("nvmlDeviceGetUtilizationRates", _UTILIZATION, handle)


def memory_v1(handle: Any) -> Any:
    return read_struct("nvmlDeviceGetMemoryInfo", _MEMORY_V1, handle)


def memory_v2(handle: Any) -> Any:
    version = getattr(pynvml, "nvmlMemory_v2", None)
    if _MEMORY_V2 is None or version is None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # bindings before it
    return read_struct("nvmlDeviceGetMemoryInfo_v2", _MEMORY_V2, handle, version=version)


def pstate_clock_range(handle: Any, clock: int, pstate: int) -> tuple[int, int]:
    """The clock range a P-state allows now (MHz). 12.535's wrapper wants the two out
    pointers and returns the status, later ones make them; given, both fill them."""
    fn = function("nvmlDeviceGetMinMaxClockOfPState")
    if fn is None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # bindings before it
    low, high = ctypes.c_uint(), ctypes.c_uint()
    fn(handle, clock, pstate, ctypes.byref(low), ctypes.byref(high))
    return int(low.value), int(high.value)


def temperature_v(handle: Any, sensor: int) -> int:
    version = getattr(pynvml, "nvmlTemperature_v1", None)
    if _TEMPERATURE_V1 is None or version is None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)  # bindings before it
    out = read_struct(
        "nvmlDeviceGetTemperatureV", _TEMPERATURE_V1, handle, version=version, sensorType=sensor
    )
    return int(out.temperature)


def fan_rpm(handle: Any) -> int:
    """The first fan's speed in RPM (nvmlDeviceGetFanSpeedRPM)."""
    version = ctypes.sizeof(FanSpeedInfo) | (1 << 24)
    return int(read_struct("nvmlDeviceGetFanSpeedRPM", FanSpeedInfo, handle, version=version).speed)


def fabric_reader(symbol: str, layout: type[ctypes.Structure]) -> Callable[[Any], str]:
    """A call of ``symbol`` with gputui's own struct: the state in words."""

    def read(handle: Any) -> str:
        fn = pynvml._nvmlGetFunctionPointer(symbol)  # raises FUNCTION_NOT_FOUND: next one
        info: Any = layout()
        if hasattr(info, "version"):
            info.version = ctypes.sizeof(layout) | (2 << 24)
        ret = fn(handle, ctypes.byref(info))
        if ret != pynvml.NVML_SUCCESS:
            raise pynvml.NVMLError(ret)
        state = FABRIC_STATES.get(int(info.state), "none")
        if state == "completed" and int(info.status) != pynvml.NVML_SUCCESS:
            return "failed"
        return state

    return read


def get_field_values(
    arrays: dict[tuple[int | tuple[int, int], ...], Any],
    handle: Any,
    ids: Sequence[int | tuple[int, int]],
) -> Any:
    """nvmlDeviceGetFieldValues into an array built once per GPU and list of ids (field, or
    field and scope), kept in ``arrays``. The bindings' wrapper builds a new array and sets
    each id through its structures' Python ``__setattr__`` on every call: a third of a
    tick's NVML time."""
    key = tuple(ids)
    values = arrays.get(key)
    if values is None:
        values = (FieldValue * len(key))()
        for entry, fid in zip(values, key, strict=True):
            if isinstance(fid, tuple):
                entry.fieldId, entry.scopeId = fid
            else:
                entry.fieldId = fid
        arrays[key] = values
    fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetFieldValues")
    ret = fn(handle, ctypes.c_int32(len(key)), ctypes.byref(values))
    if ret != pynvml.NVML_SUCCESS:
        raise pynvml.NVMLError(ret)
    return values


# -- raw values ----------------------------------------------------------------------------
# nvmlValue_t is a union: which member holds the reading depends on its valueType.
# Each member is read from the union's bytes (each starts at its first byte).
VALUE_READERS = {
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
FIELD_ROW = struct.Struct("=IIqqII8s")
# One nvmlSample_t: the timestamp (µs) and the value union's 8 bytes.
SAMPLE_ROW = struct.Struct("=Q8s")
# Values NVML uses for "no reading" inside an otherwise successful answer.
SENTINELS = frozenset({0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFF})


def field_rows(values: Any) -> list[tuple[int, int, int, int, bytes]]:
    """(field id, scope id, return code, value type, the value's bytes) of each entry of
    an nvmlFieldValue_t array (this module's or the bindings')."""
    return [
        (fid, scope, ret, kind, raw)
        for fid, scope, _stamp, _latency, kind, ret, raw in FIELD_ROW.iter_unpack(values)
    ]


# Each member of the value union as a Struct code over its 8 bytes (its reader's, padded):
# a batch whose entries hold known types reads in one unpack, each value already a number.
# In native layout ("@") an entry's members fall where FIELD_ROW puts them (each at its own
# alignment already); ``read_rows`` checks the batch's size before it trusts that.
_MEMBER_CODES = {
    kind: f"{reader.format.lstrip('@')}{8 - reader.size}x" for kind, reader in VALUE_READERS.items()
}
FieldRow = tuple[int, int, int, int, "float | int | None"]


@functools.lru_cache(maxsize=64)
def _typed_batch(kinds: tuple[int, ...]) -> struct.Struct | None:
    codes = [_MEMBER_CODES.get(kind) for kind in kinds]
    if None in codes:
        return None
    return struct.Struct("@" + "".join(f"IIqqII{code}" for code in codes))


def read_rows(values: Any, kinds: tuple[int, ...]) -> tuple[list[FieldRow], tuple[int, ...]]:
    """(field id, scope id, return code, value type, the value: None for an unknown type)
    of each entry of a field batch, and the value types found. ``kinds``: the types the
    same batch held last time; while the driver fills the same members, the batch is read
    in one unpack."""
    typed = _typed_batch(kinds) if kinds else None
    if typed is not None and typed.size == ctypes.sizeof(values):
        flat = typed.unpack(values)
        if flat[4::7] == kinds:
            return list(
                zip(flat[0::7], flat[1::7], flat[5::7], kinds, flat[6::7], strict=True)
            ), kinds
    rows = [
        (fid, scope, ret, kind, read_value(kind, raw))
        for fid, scope, ret, kind, raw in field_rows(values)
    ]
    return rows, tuple(row[3] for row in rows)


def read_value(kind: int, raw: bytes) -> float | int | None:
    """The union's member ``kind`` names; None for a type this module does not know."""
    reader = VALUE_READERS.get(kind)
    return reader.unpack_from(raw)[0] if reader is not None else None


def whole_number(value: float | int | None) -> int | None:
    """A field's value as a non-negative whole number; None for no reading (unknown type,
    NaN, negative, infinite, a sentinel)."""
    if value is None or value != value or value < 0 or value == math.inf:
        return None
    return clean(int(value))


def counter_value(kind: int, value: float | int | None) -> int | None:
    """A counter's raw value: an all-ones 32-bit counter is a value on its way to wrapping,
    not a sentinel."""
    if value is None or kind == pynvml.NVML_VALUE_TYPE_DOUBLE or value < 0:
        return None
    return int(value)


def field_unsigned(kind: int, raw: bytes) -> int | None:
    """A counter's raw value (see ``counter_value``)."""
    return counter_value(kind, read_value(kind, raw))


def value_bits(kind: int) -> int:
    """How wide a counter is, from the union member the driver filled."""
    if kind in (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, pynvml.NVML_VALUE_TYPE_SIGNED_INT):
        return 32
    if kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG:
        return 8 * ctypes.sizeof(ctypes.c_ulong)
    return 64


def clean(value: int | None) -> int | None:
    """An integer answer, or None for NVML's "no reading" sentinels."""
    if value is None or value in SENTINELS:
        return None
    return int(value)


def text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def handle_key(handle: Any) -> int | None:
    """A device handle as a number (event data names its device by handle)."""
    # a copy of the pointer's bytes: ctypes.cast would tie the handle into a reference cycle
    try:
        return ctypes.c_void_p.from_buffer_copy(handle).value
    except (TypeError, ValueError):  # not a ctypes object, or smaller than a pointer
        return None


def celsius(value: int | None) -> float | None:
    """A GPU temperature, or None for sentinels (-1, 0, 0xFFFFFFFF) and impossible values."""
    if value is None or not 0 < value <= 150:
        return None
    return float(value)


def percent(value: float | int | None) -> float | None:
    if value is None or value in SENTINELS:
        return None
    value = float(value)
    if value != value or value < 0 or value > 100:
        return None
    return value


def fan(value: int | None) -> float | None:
    """Fan speed in % of the fan's rated maximum: some boards run above 100 % for real."""
    if value is None or value in SENTINELS or not 0 <= value <= 255:
        return None
    return float(value)


def rpm(value: int | None) -> float | None:
    """A fan's RPM, or None for sentinels and speeds no fan turns at."""
    if value is None or value in SENTINELS or not 0 <= value <= 30_000:
        return None
    return float(value)


def cuda_version(value: Any) -> str | None:
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def mig_profile(name: str) -> str:
    """'NVIDIA A100-SXM4-40GB MIG 1g.5gb' -> '1g.5gb', as nvidia-smi shows it."""
    _, sep, profile = name.rpartition(" MIG ")
    return profile.strip() if sep else name
