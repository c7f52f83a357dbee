"""A test double for libnvidia-ml.so.1, driven through the real nvidia-ml-py code.

pynvml loads the native library with ``CDLL("libnvidia-ml.so.1")`` and looks functions up
by name on it. ``install`` makes that CDLL return ``FakeNvmlLib``, whose attributes are
Python callables with the C calling convention: they receive the same ctypes arguments
(``byref`` out-parameters, buffers, struct arrays) and return an ``nvmlReturn_t``. A
missing attribute is a function the "driver" lacks, exactly as with an old libnvidia-ml.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml
import pytest

OK: int = pynvml.NVML_SUCCESS
NOT_SUPPORTED: int = pynvml.NVML_ERROR_NOT_SUPPORTED
NO_PERMISSION: int = pynvml.NVML_ERROR_NO_PERMISSION
GPU_IS_LOST: int = pynvml.NVML_ERROR_GPU_IS_LOST
UNKNOWN: int = pynvml.NVML_ERROR_UNKNOWN
INSUFFICIENT_SIZE: int = pynvml.NVML_ERROR_INSUFFICIENT_SIZE
GPU_NOT_FOUND = 28  # nvml.h's NVML_ERROR_GPU_NOT_FOUND; nvidia-ml-py < 12.550 lacks it
NOT_FOUND: int = pynvml.NVML_ERROR_NOT_FOUND
TIMEOUT: int = pynvml.NVML_ERROR_TIMEOUT
INVALID_ARGUMENT: int = pynvml.NVML_ERROR_INVALID_ARGUMENT
ARGUMENT_VERSION_MISMATCH = 25  # nvml.h's NVML_ERROR_ARGUMENT_VERSION_MISMATCH
MIB = 1024**2
XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError


@dataclass
class FakeProcess:
    pid: int
    used_memory: int
    gpu_instance: int | None = None  # MIG: the GPU instance it runs in
    compute_instance: int | None = None


@dataclass
class FakeMig:
    """One MIG instance (a MIG device handle) of a GPU in MIG mode."""

    gpu_instance: int
    compute_instance: int = 0
    profile: str = "1g.10gb"
    memory_total: int = 9856 * MIB
    memory_used: int = 1200 * MIB
    gpm_sm: float = 33.0


@dataclass
class FakeNvLink:
    """One NVLink: up or down, where it goes, its cumulative counters."""

    remote_bus: str = "00000000:05:00.0"  # an NVSwitch
    active: bool = True
    version: int = 4
    tx_kib: int = 1_000_000
    rx_kib: int = 2_000_000
    crc: int = 0
    replay: int = 0
    recovery: int = 0


@dataclass
class FakeGpu:
    """One fake H100 SXM; override fields per test."""

    name: str = "NVIDIA H100 80GB HBM3"
    uuid: str = "GPU-5f0c2a1e-1111-2222-3333-444455556666"
    bus_id: str = "00000000:18:00.0"
    arch: int = pynvml.NVML_DEVICE_ARCH_HOPPER
    cc: tuple[int, int] = (9, 0)
    memory_total: int = 81559 * MIB
    memory_used: int = 40000 * MIB
    memory_used_v1: int = 40500 * MIB  # v1 counts reserved memory as used
    max_clocks: dict[int, int] = field(
        default_factory=lambda: {
            pynvml.NVML_CLOCK_GRAPHICS: 1980,
            pynvml.NVML_CLOCK_SM: 1980,
            pynvml.NVML_CLOCK_MEM: 2619,
        }
    )
    clocks: dict[int, int] = field(
        default_factory=lambda: {
            pynvml.NVML_CLOCK_GRAPHICS: 1755,
            pynvml.NVML_CLOCK_SM: 1755,
            pynvml.NVML_CLOCK_MEM: 2619,
        }
    )
    app_clocks: dict[int, int] = field(
        default_factory=lambda: {pynvml.NVML_CLOCK_SM: 1755, pynvml.NVML_CLOCK_MEM: 2619}
    )
    thresholds: dict[int, int] = field(
        default_factory=lambda: {
            pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: 92,
            pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: 89,
            pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: 87,
            pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: 95,
        }
    )
    temperature: int = 71
    margin: int = 18
    power_mw: int = 612_345
    enforced_limit_mw: int = 700_000
    default_limit_mw: int = 700_000
    limit_constraints_mw: tuple[int, int] = (200_000, 700_000)
    util: tuple[int, int] = (97, 41)
    # the fan speed the driver asks for (%); None: NOT_SUPPORTED, as on this passively
    # cooled H100 (the chassis cools it)
    fan: int | None = None
    # the first fan's tachometer (nvmlDeviceGetFanSpeedRPM); None: NOT_SUPPORTED
    fan_rpm: int | None = None
    pstate: int = 0
    reasons: int = 0
    energy_mj: int = 123_456_789
    pcie_gen: int = 5
    pcie_width: int = 16
    pcie_max_gen: int = 5
    pcie_max_width: int = 16
    pcie_rx_total: int = 10_000_000_000
    pcie_tx_total: int = 2_000_000_000
    pcie_throughput_kib: tuple[int, int] = (2_000_000, 300_000)  # rx, tx
    replay: int = 3
    ecc_sbe: int = 0
    ecc_dbe: int = 0
    ecc_dbe_aggregate: int = 0
    remapped_pending: int = 0
    remapped_corrected: int = 0
    remapped_uncorrected: int = 0
    remapped_failure: int = 0
    # page retirement (before Ampere): None is a board without it (Hopper: NOT_SUPPORTED)
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: int | None = None
    mem_temp: int = 77
    persistence: int = 1
    compute_mode: int = 0
    mig: int = 0
    ecc_mode: int = 1
    gpm: bool = False
    gpm_values: tuple[float, float] = (78.5, 41.0)
    processes: list[FakeProcess] = field(default_factory=lambda: [FakeProcess(4242, 39000 * MIB)])
    graphics_processes: list[FakeProcess] = field(default_factory=list)
    # function name -> nvmlReturn_t to answer instead of the value
    errors: dict[str, int] = field(default_factory=dict)
    # every call on this GPU answers GPU_IS_LOST
    lost: bool = False
    # field id -> nvmlReturn_t inside nvmlDeviceGetFieldValues
    field_errors: dict[int, int] = field(default_factory=dict)
    # the card's own maximum generation (nvmlDeviceGetGpuMaxPcieLinkGeneration)
    gpu_max_gen: int | None = None
    # PCIe byte counters' width: 64, or 32 on boards that wrap them (fields 197/198)
    pcie_counter_bits: int = 64
    # a 32-bit counter as the driver types it: an unsigned int, or (True) inside an unsigned
    # long long; nvml.h says only that the value "can be wrapped", not at what width
    pcie_counter_in_ull: bool = False
    # how long one nvmlDeviceGetPcieThroughput call blocks (R535/R550: about 20 ms)
    throughput_delay_s: float = 0.0
    mps_processes: list[FakeProcess] = field(default_factory=list)
    # the driver's utilisation samples: (timestamp µs, percent)
    util_samples: list[tuple[int, int]] = field(default_factory=list)
    # NVML_PERF_POLICY_* -> cumulative ns held down (nvmlDeviceGetViolationStatus)
    violations_ns: dict[int, int] = field(default_factory=dict)
    migs: list[FakeMig] = field(default_factory=list)
    # topology: NUMA node (None: nvmlDeviceGetNumaNodeId not supported), the CPUs near it,
    # the PCIe switch it sits behind (None: straight on the root port)
    numa_node: int | None = None
    cpu_affinity: tuple[int, ...] = ()
    pcie_switch: int | None = None
    nvlinks: list[FakeNvLink] = field(default_factory=list)
    # NVML_GPU_FABRIC_STATE_* (None: the fabric call answers NOT_SUPPORTED), its status
    fabric_state: int | None = None
    fabric_status: int = OK
    # mode changes waiting for a reset (None: the same as the current mode)
    mig_pending: int | None = None
    ecc_pending: int | None = None
    # its device file /dev/nvidia<minor> (None: its index)
    minor: int | None = None
    # the graphics clock range P0 allows (nvmlDeviceGetMinMaxClockOfPState); None: the
    # board's (345 MHz to its maximum)
    p0_range: tuple[int, int] | None = None
    # peer-to-peer to another GPU by index -> NVML_P2P_STATUS_* for reads and writes
    # (absent: OK)
    p2p: dict[int, int] = field(default_factory=dict)


#: an HGX H100 board's GPU bus ids, and its four NVSwitches'
HGX_BUS_IDS = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
NVSWITCH_BUS_IDS = ("05", "06", "07", "08")
CPUS_PER_SOCKET = 56


def hgx(count: int = 8, links: int = 18, **overrides: Any) -> list[FakeGpu]:
    """Two sockets, GPUs in pairs behind PCIe switches (GPU 0-1 on switch 0...), the first
    half on NUMA node 0, every GPU with ``links`` NVLinks to the NVSwitches, fabric ready."""
    out = []
    for i in range(count):
        node = 0 if i < count // 2 or count == 1 else 1
        first = node * CPUS_PER_SOCKET
        out.append(
            FakeGpu(
                uuid=f"GPU-5f0c2a1e-1111-2222-3333-4444555566{i:02d}",
                bus_id=f"00000000:{HGX_BUS_IDS[i % 8]}:00.0",
                numa_node=node,
                cpu_affinity=tuple(range(first, first + CPUS_PER_SOCKET)),
                pcie_switch=i // 2,
                nvlinks=[
                    FakeNvLink(remote_bus=f"00000000:{NVSWITCH_BUS_IDS[k % 4]}:00.0")
                    for k in range(links)
                ],
                fabric_state=3,
                processes=[FakeProcess(4242 + i, 39000 * MIB)],
                **overrides,
            )
        )
    return out


class DriverProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t as the driver lays it out: the unversioned functions fill it."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class DriverProcessInfoR535(ctypes.Structure):
    """What R535 drivers' _v3 functions write: 32-byte entries, no version bump."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


class DriverSample(ctypes.Structure):
    """nvmlSample_t: timestamp and an 8-byte value union."""

    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("value", ctypes.c_ulonglong)]


class DriverProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t as the driver lays it out: the _v2 and the _v3 functions fill it
    (drivers other than 535.43-535.86), whatever struct the caller's bindings assume."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


def _out(ref: Any) -> Any:
    """The object a ``byref(...)`` argument points to."""
    return ref._obj


_NVLINK_FIELDS = frozenset({138, 139, 161, 162, 163, 165})
_MIG_BASE = 0x10000  # MIG device handles: parent * base + slot + 1, above the GPUs'


def _value(handle: Any) -> int:
    # the pointer's bytes copied: a cast would tie each handle into a reference cycle
    value = ctypes.c_void_p.from_buffer_copy(handle).value
    assert value is not None
    return value


def _index(handle: Any) -> int:
    """The GPU a handle belongs to (a MIG device's parent for a MIG handle)."""
    value = _value(handle)
    return value // _MIG_BASE - 1 if value >= _MIG_BASE else value - 1


def _set_pointer(target: Any, value: int) -> None:
    ctypes.cast(ctypes.pointer(target), ctypes.POINTER(ctypes.c_void_p)).contents.value = value


class FakeNvmlLib:
    """The native NVML library's functions, as a Python object."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        init_error: int = OK,
        missing: set[str] | None = None,
        driver: str = "550.54.15",
        cuda: int = 12040,
        v3_entry_size: int = 24,
    ) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.missing = missing or set()
        self.driver = driver
        self.cuda = cuda
        self.v3_entry_size = v3_entry_size
        self.calls: dict[str, int] = {}
        self.initialised = 0
        self._gpm_next = 1
        self.gpm_live: set[int] = set()  # GPM samples allocated and not freed
        self._gpm_owner: dict[int, float] = {}  # sample -> its SM figure
        self._gpm_values: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()
        #: Xid events waiting in the event set: (GPU index, Xid code)
        self.xid_queue: list[tuple[int, int]] = []
        self.registered: dict[int, int] = {}  # GPU index -> event mask registered
        self.event_sets = 0
        #: when set, nvmlDeviceGetPcieThroughput waits for it (a test holds a window open)
        self.throughput_gate: threading.Event | None = None
        self.throughput_threads: set[str] = set()  # threads that sampled a window

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name in self.missing:
            raise AttributeError(name)
        impl = getattr(type(self), "fn_" + name, None)
        if impl is None:
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            with self._lock:
                self.calls[name] = self.calls.get(name, 0) + 1
            return impl(self, name, *args)

        return call

    # -- helpers -----------------------------------------------------------------
    def _mig(self, handle: Any) -> FakeMig | None:
        value = _value(handle)
        if value < _MIG_BASE:
            return None
        return self.gpus[value // _MIG_BASE - 1].migs[value % _MIG_BASE - 1]

    def _gpu(self, name: str, handle: Any) -> tuple[FakeGpu | None, int]:
        gpu = self.gpus[_index(handle)]
        if gpu.lost:
            return None, GPU_IS_LOST
        if name in gpu.errors:
            return None, gpu.errors[name]
        return gpu, OK

    def _scalar(self, name: str, handle: Any, ref: Any, value: Callable[[FakeGpu], Any]) -> int:
        gpu, ret = self._gpu(name, handle)
        if gpu is None:
            return ret
        _out(ref).value = value(gpu)
        return OK

    # -- system ------------------------------------------------------------------
    def fn_nvmlInitWithFlags(self, name: str, flags: Any) -> int:
        if self.init_error == OK:
            self.initialised += 1
        return self.init_error

    def fn_nvmlShutdown(self, name: str) -> int:
        self.initialised -= 1
        return OK

    def fn_nvmlErrorString(self, name: str, code: Any) -> bytes:
        return b"fake error"

    def fn_nvmlSystemGetDriverVersion(self, name: str, buf: Any, size: Any) -> int:
        buf.value = self.driver.encode()
        return OK

    def fn_nvmlSystemGetCudaDriverVersion_v2(self, name: str, ref: Any) -> int:
        _out(ref).value = self.cuda
        return OK

    def fn_nvmlSystemGetCudaDriverVersion(self, name: str, ref: Any) -> int:
        _out(ref).value = self.cuda
        return OK

    def fn_nvmlDeviceGetCount_v2(self, name: str, ref: Any) -> int:
        _out(ref).value = len(self.gpus)
        return OK

    def fn_nvmlDeviceGetHandleByIndex_v2(self, name: str, index: Any, ref: Any) -> int:
        _set_pointer(_out(ref), index.value + 1)
        return OK

    # R535 added this and R550 the next: which of them a driver has tells its _v3 layout
    def fn_nvmlDeviceGetConfComputeMemSizeInfo(self, name: str, *args: Any) -> int:
        return NOT_SUPPORTED

    def fn_nvmlDeviceGetRunningProcessDetailList(self, name: str, *args: Any) -> int:
        return NOT_SUPPORTED

    # -- static facts ------------------------------------------------------------
    def fn_nvmlDeviceGetName(self, name: str, h: Any, buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mig = self._mig(h)
        buf.value = (gpu.name + (f" MIG {mig.profile}" if mig else "")).encode()
        return OK

    def fn_nvmlDeviceGetUUID(self, name: str, h: Any, buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mig = self._mig(h)
        buf.value = (f"MIG-{mig.gpu_instance:08x}-0000" if mig else gpu.uuid).encode()
        return OK

    def fn_nvmlDeviceGetPciInfo_v3(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(ref).busId = gpu.bus_id.encode()
        return OK

    def fn_nvmlDeviceGetArchitecture(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.arch)

    def fn_nvmlDeviceGetCudaComputeCapability(self, name: str, h: Any, a: Any, b: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(a).value, _out(b).value = gpu.cc
        return OK

    def fn_nvmlDeviceGetPowerManagementLimitConstraints(
        self, name: str, h: Any, a: Any, b: Any
    ) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(a).value, _out(b).value = gpu.limit_constraints_mw
        return OK

    def fn_nvmlDeviceGetMigMode(self, name: str, h: Any, a: Any, b: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(a).value = gpu.mig
        _out(b).value = gpu.mig if gpu.mig_pending is None else gpu.mig_pending
        return OK

    def fn_nvmlDeviceGetEccMode(self, name: str, h: Any, a: Any, b: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(a).value = gpu.ecc_mode
        _out(b).value = gpu.ecc_mode if gpu.ecc_pending is None else gpu.ecc_pending
        return OK

    def fn_nvmlDeviceGetMinorNumber(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(
            name, h, ref, lambda g: self.gpus.index(g) if g.minor is None else g.minor
        )

    def fn_nvmlDeviceGetMinMaxClockOfPState(
        self, name: str, h: Any, kind: Any, pstate: Any, low: Any, high: Any
    ) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if int(getattr(pstate, "value", pstate)) != 0:
            return NOT_SUPPORTED
        top = gpu.max_clocks.get(int(getattr(kind, "value", kind)))
        if top is None:
            return INVALID_ARGUMENT
        _out(low).value, _out(high).value = gpu.p0_range or (345, top)
        return OK

    def fn_nvmlDeviceGetP2PStatus(self, name: str, a: Any, b: Any, index: Any, ref: Any) -> int:
        one, ret = self._gpu(name, a)
        if one is None:
            return ret
        other = _index(b)
        _out(ref).value = one.p2p.get(other, 0)  # NVML_P2P_STATUS_OK
        return OK

    def fn_nvmlDeviceGetPersistenceMode(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.persistence)

    def fn_nvmlDeviceGetComputeMode(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.compute_mode)

    def fn_nvmlGpmQueryDeviceSupport(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(ref).isSupportedDevice = 1 if gpu.gpm else 0
        return OK

    def fn_nvmlDeviceGetMaxClockInfo(self, name: str, h: Any, kind: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.max_clocks[kind.value])

    def fn_nvmlDeviceGetDefaultApplicationsClock(
        self, name: str, h: Any, kind: Any, ref: Any
    ) -> int:
        return self._scalar(name, h, ref, lambda g: g.app_clocks[kind.value])

    def fn_nvmlDeviceGetApplicationsClock(self, name: str, h: Any, kind: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.app_clocks[kind.value])

    def fn_nvmlDeviceGetTemperatureThreshold(self, name: str, h: Any, kind: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        value = gpu.thresholds.get(kind.value)
        if value is None:
            return NOT_SUPPORTED
        _out(ref).value = value
        return OK

    def fn_nvmlDeviceGetEnforcedPowerLimit(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.enforced_limit_mw)

    def fn_nvmlDeviceGetPowerManagementDefaultLimit(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.default_limit_mw)

    def fn_nvmlDeviceGetMaxPcieLinkGeneration(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pcie_max_gen)

    def fn_nvmlDeviceGetGpuMaxPcieLinkGeneration(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(
            name, h, ref, lambda g: g.gpu_max_gen if g.gpu_max_gen is not None else g.pcie_max_gen
        )

    def fn_nvmlDeviceGetMaxPcieLinkWidth(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pcie_max_width)

    # -- per tick ----------------------------------------------------------------
    def fn_nvmlDeviceGetMemoryInfo_v2(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mem = _out(ref)
        mig = self._mig(h)
        if mig is not None:
            mem.total, mem.used = mig.memory_total, mig.memory_used
            mem.reserved, mem.free = 0, mig.memory_total - mig.memory_used
            return OK
        mem.total = gpu.memory_total
        mem.reserved = 500 * MIB
        mem.used = gpu.memory_used
        mem.free = gpu.memory_total - gpu.memory_used - 500 * MIB
        return OK

    def fn_nvmlDeviceGetMemoryInfo(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mem = _out(ref)
        mem.total = gpu.memory_total
        mem.used = gpu.memory_used_v1
        mem.free = gpu.memory_total - gpu.memory_used_v1
        return OK

    def fn_nvmlDeviceGetUtilizationRates(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if gpu.mig:
            return NOT_SUPPORTED  # in MIG mode the parent has no utilisation
        _out(ref).gpu, _out(ref).memory = gpu.util
        return OK

    def fn_nvmlDeviceGetSamples(
        self, name: str, h: Any, kind: Any, last: Any, vtype: Any, count: Any, buf: Any
    ) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if gpu.mig:
            return NOT_SUPPORTED
        fresh = [s for s in gpu.util_samples if s[0] > last.value]
        if not fresh:
            return NOT_FOUND
        if buf is None or _out(count).value < len(fresh):
            _out(count).value = len(fresh)
            return INSUFFICIENT_SIZE if buf is not None else OK
        _out(vtype).value = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
        entries = ctypes.cast(buf, ctypes.POINTER(DriverSample))
        for i, (stamp, value) in enumerate(fresh):
            entries[i].timeStamp, entries[i].value = stamp, value
        _out(count).value = len(fresh)
        return OK

    def fn_nvmlDeviceGetViolationStatus(self, name: str, h: Any, policy: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if policy.value not in gpu.violations_ns:
            return NOT_SUPPORTED
        _out(ref).referenceTime = 1
        _out(ref).violationTime = gpu.violations_ns[policy.value]
        return OK

    def fn_nvmlDeviceGetTemperatureV(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(ref).temperature = gpu.temperature
        return OK

    def fn_nvmlDeviceGetTemperature(self, name: str, h: Any, sensor: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.temperature)

    def fn_nvmlDeviceGetMarginTemperature(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(ref).marginTemperature = gpu.margin
        return OK

    def fn_nvmlDeviceGetCurrentClocksEventReasons(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.reasons)

    def fn_nvmlDeviceGetCurrentClocksThrottleReasons(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.reasons)

    def fn_nvmlDeviceGetPowerUsage(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.power_mw)

    def fn_nvmlDeviceGetTotalEnergyConsumption(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.energy_mj)

    def fn_nvmlDeviceGetFanSpeed(self, name: str, h: Any, ref: Any) -> int:
        gpu = self.gpus[_index(h)]
        if gpu.fan is None and not gpu.lost and name not in gpu.errors:
            return NOT_SUPPORTED
        return self._scalar(name, h, ref, lambda g: g.fan)

    def fn_nvmlDeviceGetFanSpeedRPM(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if gpu.fan_rpm is None:
            return NOT_SUPPORTED
        info = _out(ref)
        if info.version != ctypes.sizeof(info) | (1 << 24):
            return ARGUMENT_VERSION_MISMATCH
        info.speed = gpu.fan_rpm
        return OK

    def fn_nvmlDeviceGetPerformanceState(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pstate)

    def fn_nvmlDeviceGetClockInfo(self, name: str, h: Any, kind: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.clocks[kind.value])

    def fn_nvmlDeviceGetCurrPcieLinkGeneration(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pcie_gen)

    def fn_nvmlDeviceGetCurrPcieLinkWidth(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pcie_width)

    def fn_nvmlDeviceGetPcieReplayCounter(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.replay)

    def fn_nvmlDeviceGetPcieThroughput(self, name: str, h: Any, counter: Any, ref: Any) -> int:
        rx_or_tx = 0 if counter.value == pynvml.NVML_PCIE_UTIL_RX_BYTES else 1
        with self._lock:
            self.throughput_threads.add(threading.current_thread().name)
        if self.throughput_gate is not None:
            self.throughput_gate.wait(5.0)
        delay = self.gpus[_index(h)].throughput_delay_s
        if delay:
            time.sleep(delay)  # the driver samples a 20 ms window before it answers
        return self._scalar(name, h, ref, lambda g: g.pcie_throughput_kib[rx_or_tx])

    def fn_nvmlDeviceGetFieldValues(self, name: str, h: Any, count: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        values = _out(ref)
        if all(values[i].fieldId in _NVLINK_FIELDS for i in range(count.value)):
            return self._nvlink_fields(gpu, values, count.value)
        table = {
            94: gpu.replay,
            3: gpu.ecc_sbe,
            4: gpu.ecc_dbe,
            6: gpu.ecc_dbe_aggregate,
            142: gpu.remapped_corrected,
            143: gpu.remapped_uncorrected,
            144: gpu.remapped_pending,
            145: gpu.remapped_failure,
            197: gpu.pcie_tx_total,
            198: gpu.pcie_rx_total,
            82: gpu.mem_temp,
            83: gpu.energy_mj,
            190: gpu.enforced_limit_mw,
        }
        retired = {29: gpu.retired_sbe, 30: gpu.retired_dbe, 31: gpu.retired_pending}
        table.update({fid: value for fid, value in retired.items() if value is not None})
        for i in range(count.value):
            entry = values[i]
            fid = entry.fieldId
            if fid in gpu.field_errors or fid not in table:
                entry.nvmlReturn = gpu.field_errors.get(fid, NOT_SUPPORTED)
                continue
            entry.nvmlReturn = OK
            if fid in (197, 198) and gpu.pcie_counter_bits == 32 and not gpu.pcie_counter_in_ull:
                entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
                entry.value.uiVal = table[fid] % (1 << 32)
                continue
            if fid in (197, 198) and gpu.pcie_counter_bits == 32:
                entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
                entry.value.ullVal = table[fid] % (1 << 32)
                continue
            entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            entry.value.ullVal = table[fid] % (1 << 64)
        return OK

    def _nvlink_fields(self, gpu: FakeGpu, values: Any, count: int) -> int:
        for i in range(count):
            entry = values[i]
            fid, link = int(entry.fieldId), int(entry.scopeId)
            if fid in gpu.field_errors or link >= len(gpu.nvlinks):
                entry.nvmlReturn = gpu.field_errors.get(fid, NOT_SUPPORTED)
                continue
            nv = gpu.nvlinks[link]
            value = {
                165: int(nv.active),
                163: nv.crc,
                161: nv.replay,
                162: nv.recovery,
                138: nv.tx_kib,
                139: nv.rx_kib,
            }[fid]
            entry.nvmlReturn = OK
            entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            entry.value.ullVal = value
        return OK

    # -- topology ----------------------------------------------------------------
    def fn_nvmlDeviceGetNumaNodeId(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if gpu.numa_node is None:
            return NOT_SUPPORTED
        _out(ref).value = gpu.numa_node
        return OK

    def _affinity(self, name: str, h: Any, size: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if not gpu.cpu_affinity:
            return NOT_SUPPORTED
        words = _out(ref)
        for cpu in gpu.cpu_affinity:
            if cpu // 64 < int(getattr(size, "value", size)):
                words[cpu // 64] |= 1 << (cpu % 64)
        return OK

    def fn_nvmlDeviceGetCpuAffinityWithinScope(
        self, name: str, h: Any, size: Any, ref: Any, scope: Any
    ) -> int:
        return self._affinity(name, h, size, ref)

    def fn_nvmlDeviceGetCpuAffinity(self, name: str, h: Any, size: Any, ref: Any) -> int:
        return self._affinity(name, h, size, ref)

    def fn_nvmlDeviceGetTopologyCommonAncestor(self, name: str, a: Any, b: Any, ref: Any) -> int:
        one, ret = self._gpu(name, a)
        other, ret2 = self._gpu(name, b)
        if one is None or other is None:
            return ret if one is None else ret2
        if one.pcie_switch is not None and one.pcie_switch == other.pcie_switch:
            level = 10  # NVML_TOPOLOGY_SINGLE: one PCIe switch
        elif one.numa_node is not None and one.numa_node == other.numa_node:
            level = 40  # NVML_TOPOLOGY_NODE
        else:
            level = 50  # NVML_TOPOLOGY_SYSTEM
        _out(ref).value = level
        return OK

    def _link(self, name: str, h: Any, link: Any) -> tuple[FakeNvLink | None, int]:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return None, ret
        if not gpu.nvlinks:
            return None, NOT_SUPPORTED
        number = int(getattr(link, "value", link))
        if number >= len(gpu.nvlinks):
            return None, INVALID_ARGUMENT
        return gpu.nvlinks[number], OK

    def fn_nvmlDeviceGetNvLinkState(self, name: str, h: Any, link: Any, ref: Any) -> int:
        nv, ret = self._link(name, h, link)
        if nv is None:
            return ret
        _out(ref).value = int(nv.active)
        return OK

    def fn_nvmlDeviceGetNvLinkVersion(self, name: str, h: Any, link: Any, ref: Any) -> int:
        nv, ret = self._link(name, h, link)
        if nv is None:
            return ret
        _out(ref).value = nv.version
        return OK

    def fn_nvmlDeviceGetNvLinkRemotePciInfo_v2(self, name: str, h: Any, link: Any, ref: Any) -> int:
        nv, ret = self._link(name, h, link)
        if nv is None:
            return ret
        _out(ref).busId = nv.remote_bus.encode()
        return OK

    def _fabric(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if gpu.fabric_state is None:
            return NOT_SUPPORTED
        info = _out(ref)
        info.state = gpu.fabric_state
        info.status = gpu.fabric_status
        return OK

    def fn_nvmlDeviceGetGpuFabricInfoV(self, name: str, h: Any, ref: Any) -> int:
        return self._fabric(name, h, ref)

    def fn_nvmlDeviceGetGpuFabricInfo(self, name: str, h: Any, ref: Any) -> int:
        return self._fabric(name, h, ref)

    def _processes(self, name: str, h: Any, count_ref: Any, array: Any, graphics: bool) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if "MPS" in name:
            procs = gpu.mps_processes
        else:
            procs = gpu.graphics_processes if graphics else gpu.processes
        count = _out(count_ref)
        if array is None:
            count.value = len(procs)
            return OK if not procs else INSUFFICIENT_SIZE
        if count.value < len(procs):
            count.value = len(procs)
            return INSUFFICIENT_SIZE
        # Fill the caller's buffer in the driver's layout, as the real library does.
        layout: type[ctypes.Structure] = DriverProcessInfoV1
        if name.endswith("_v3") and self.v3_entry_size == 32:
            layout = DriverProcessInfoR535
        elif name.endswith(("_v2", "_v3")):
            layout = DriverProcessInfoV2
        # A driver leaves no Python garbage behind: ctypes.cast would tie the caller's
        # buffer into a reference cycle, so its entries are written through from_buffer.
        size = ctypes.sizeof(layout)
        for i, proc in enumerate(procs):
            entry: Any = layout.from_buffer(array, i * size)
            entry.pid = proc.pid
            entry.usedGpuMemory = proc.used_memory
            if layout is not DriverProcessInfoV1:
                none = 0xFFFFFFFF
                gi, ci = proc.gpu_instance, proc.compute_instance
                entry.gpuInstanceId = gi if gi is not None else none
                entry.computeInstanceId = ci if ci is not None else none
            if layout is DriverProcessInfoR535:
                entry.usedGpuCcProtectedMemory = 0
        count.value = len(procs)
        return OK

    def fn_nvmlDeviceGetMPSComputeRunningProcesses_v3(
        self, name: str, h: Any, c: Any, a: Any
    ) -> int:
        return self._processes(name, h, c, a, graphics=False)

    def fn_nvmlDeviceGetMPSComputeRunningProcesses_v2(
        self, name: str, h: Any, c: Any, a: Any
    ) -> int:
        return self._processes(name, h, c, a, graphics=False)

    def fn_nvmlDeviceGetMPSComputeRunningProcesses(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=False)

    # -- MIG ---------------------------------------------------------------------
    def fn_nvmlDeviceGetMaxMigDeviceCount(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: 7 if g.mig else 0)

    def fn_nvmlDeviceGetMigDeviceHandleByIndex(
        self, name: str, h: Any, index: Any, ref: Any
    ) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        if not gpu.mig or index.value >= len(gpu.migs):
            return NOT_FOUND
        _set_pointer(_out(ref), _value(h) * _MIG_BASE + index.value + 1)
        return OK

    def fn_nvmlDeviceGetGpuInstanceId(self, name: str, h: Any, ref: Any) -> int:
        mig = self._mig(h)
        if mig is None:
            return INVALID_ARGUMENT
        _out(ref).value = mig.gpu_instance
        return OK

    def fn_nvmlDeviceGetComputeInstanceId(self, name: str, h: Any, ref: Any) -> int:
        mig = self._mig(h)
        if mig is None:
            return INVALID_ARGUMENT
        _out(ref).value = mig.compute_instance
        return OK

    # -- events ------------------------------------------------------------------
    def fn_nvmlEventSetCreate(self, name: str, ref: Any) -> int:
        self.event_sets += 1
        _set_pointer(_out(ref), 0xE5E7)
        return OK

    def fn_nvmlEventSetFree(self, name: str, event_set: Any) -> int:
        self.event_sets -= 1
        return OK

    def fn_nvmlDeviceRegisterEvents(self, name: str, h: Any, types: Any, event_set: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        self.registered[_index(h)] = int(types.value)
        return OK

    def fn_nvmlEventSetWait_v2(self, name: str, event_set: Any, ref: Any, timeout: Any) -> int:
        if not self.xid_queue:
            return TIMEOUT
        index, code = self.xid_queue.pop(0)
        data = _out(ref)
        _set_pointer(data.device, index + 1)
        data.eventType = XID_CRITICAL
        data.eventData = code
        return OK

    def fn_nvmlDeviceGetComputeRunningProcesses_v3(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=False)

    def fn_nvmlDeviceGetComputeRunningProcesses_v2(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=False)

    def fn_nvmlDeviceGetComputeRunningProcesses(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=False)

    def fn_nvmlDeviceGetGraphicsRunningProcesses_v3(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=True)

    def fn_nvmlDeviceGetGraphicsRunningProcesses_v2(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=True)

    def fn_nvmlDeviceGetGraphicsRunningProcesses(self, name: str, h: Any, c: Any, a: Any) -> int:
        return self._processes(name, h, c, a, graphics=True)

    # -- GPM ---------------------------------------------------------------------
    def fn_nvmlGpmSampleAlloc(self, name: str, ref: Any) -> int:
        _set_pointer(_out(ref), self._gpm_next)
        self.gpm_live.add(self._gpm_next)
        self._gpm_next += 1
        return OK

    def fn_nvmlGpmSampleFree(self, name: str, sample: Any) -> int:
        self.gpm_live.discard(_value(sample))
        return OK

    def fn_nvmlGpmSampleGet(self, name: str, h: Any, sample: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        self._gpm_values[_value(sample)] = gpu.gpm_values
        return OK

    def fn_nvmlGpmMigSampleGet(self, name: str, h: Any, gi: Any, sample: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mig = next((m for m in gpu.migs if m.gpu_instance == gi), None)
        if mig is None:
            return NOT_FOUND
        self._gpm_values[_value(sample)] = (mig.gpm_sm, 0.0)
        return OK

    def fn_nvmlGpmMetricsGet(self, name: str, ref: Any) -> int:
        request = _out(ref)
        sm, tensor = self._gpm_values[_value(request.sample2)]
        by_id = {2: sm, 5: tensor}
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            metric.nvmlReturn = OK
            metric.value = by_id[metric.metricId]
        return OK


# -- the driver branches people run ------------------------------------------------------
# Functions each branch lacks (the test double has everything else).
_FROM_R550 = {"nvmlDeviceGetRunningProcessDetailList"}
_FROM_R565 = {"nvmlDeviceGetTemperatureV"}
_FROM_R570 = {"nvmlDeviceGetMarginTemperature"}


def driver(branch: int, gpus: list[FakeGpu], **options: Any) -> FakeNvmlLib:
    """A fake libnvidia-ml that behaves like driver branch ``branch`` (535, 550, 555, 570,
    580): which functions it exports, its _v3 process layout, whether it has the PCIe byte
    counters, and a 20 ms nvmlDeviceGetPcieThroughput where it has none."""
    missing: set[str] = set(options.pop("missing", set()))
    if branch < 550:
        missing |= _FROM_R550
    if branch < 565:
        missing |= _FROM_R565
    if branch < 570:
        missing |= _FROM_R570
    for gpu in gpus:
        if branch < 555:  # the byte counters answer from R555
            gpu.field_errors.setdefault(197, NOT_SUPPORTED)
            gpu.field_errors.setdefault(198, NOT_SUPPORTED)
            gpu.throughput_delay_s = gpu.throughput_delay_s or 0.02
    versions = {535: "535.183.01", 550: "550.127.05", 555: "555.42.06", 570: "570.86.15"}
    return FakeNvmlLib(
        gpus,
        missing=missing,
        driver=versions.get(branch, f"{branch}.65.06"),
        v3_entry_size=32 if branch < 550 else 24,
        **options,
    )


def install(monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib | None) -> None:
    """Make pynvml load ``lib`` as libnvidia-ml.so.1 (None: the library is not installed)."""

    def fake_cdll(path: str, *args: Any, **kwargs: Any) -> FakeNvmlLib:
        if lib is None:
            raise OSError(f"{path}: cannot open shared object file: No such file or directory")
        return lib

    monkeypatch.setattr(pynvml, "CDLL", fake_cdll)
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setattr(pynvml, "_nvmlLib_refcount", 0)
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
