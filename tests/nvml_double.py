"""A test double for libnvidia-ml.so.1, driven through the real nvidia-ml-py code.

pynvml loads the native library with ``CDLL("libnvidia-ml.so.1")`` and looks functions up
by name on it. ``install`` makes that CDLL return ``FakeNvmlLib``, whose attributes are
Python callables with the C calling convention: they receive the same ctypes arguments
(``byref`` out-parameters, buffers, struct arrays) and return an ``nvmlReturn_t``. A
missing attribute is a function the "driver" lacks, exactly as with an old libnvidia-ml.
"""

from __future__ import annotations

import ctypes
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
MIB = 1024**2


@dataclass
class FakeProcess:
    pid: int
    used_memory: int


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
    fan: int = 0
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
    remapped_pending: int = 0
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


class DriverProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t as the driver lays it out: the unversioned functions fill it."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


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


def _index(handle: Any) -> int:
    value = ctypes.cast(handle, ctypes.c_void_p).value
    assert value is not None
    return value - 1


class FakeNvmlLib:
    """The native NVML library's functions, as a Python object."""

    def __init__(
        self,
        gpus: list[FakeGpu],
        init_error: int = OK,
        missing: set[str] | None = None,
        driver: str = "550.54.15",
        cuda: int = 12040,
    ) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.missing = missing or set()
        self.driver = driver
        self.cuda = cuda
        self.calls: dict[str, int] = {}
        self.initialised = 0
        self._gpm_next = 1

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name in self.missing:
            raise AttributeError(name)
        impl = getattr(type(self), "fn_" + name, None)
        if impl is None:
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return impl(self, name, *args)

        return call

    # -- helpers -----------------------------------------------------------------
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
        handle = _out(ref)
        ctypes.cast(ctypes.pointer(handle), ctypes.POINTER(ctypes.c_void_p)).contents.value = (
            index.value + 1
        )
        return OK

    # -- static facts ------------------------------------------------------------
    def fn_nvmlDeviceGetName(self, name: str, h: Any, buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        buf.value = gpu.name.encode()
        return OK

    def fn_nvmlDeviceGetUUID(self, name: str, h: Any, buf: Any, size: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        buf.value = gpu.uuid.encode()
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
        _out(a).value = _out(b).value = gpu.mig
        return OK

    def fn_nvmlDeviceGetEccMode(self, name: str, h: Any, a: Any, b: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        _out(a).value = _out(b).value = gpu.ecc_mode
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
        return self._scalar(name, h, ref, lambda g: g.pcie_max_gen)

    def fn_nvmlDeviceGetMaxPcieLinkWidth(self, name: str, h: Any, ref: Any) -> int:
        return self._scalar(name, h, ref, lambda g: g.pcie_max_width)

    # -- per tick ----------------------------------------------------------------
    def fn_nvmlDeviceGetMemoryInfo_v2(self, name: str, h: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        mem = _out(ref)
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
        _out(ref).gpu, _out(ref).memory = gpu.util
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
        return self._scalar(name, h, ref, lambda g: g.fan)

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
        return self._scalar(name, h, ref, lambda g: g.pcie_throughput_kib[rx_or_tx])

    def fn_nvmlDeviceGetFieldValues(self, name: str, h: Any, count: Any, ref: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        values = _out(ref)
        table = {
            94: gpu.replay,
            3: gpu.ecc_sbe,
            4: gpu.ecc_dbe,
            144: gpu.remapped_pending,
            197: gpu.pcie_tx_total,
            198: gpu.pcie_rx_total,
            82: gpu.mem_temp,
        }
        for i in range(count.value):
            entry = values[i]
            fid = entry.fieldId
            if fid in gpu.field_errors or fid not in table:
                entry.nvmlReturn = gpu.field_errors.get(fid, NOT_SUPPORTED)
                continue
            entry.nvmlReturn = OK
            entry.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            entry.value.ullVal = table[fid]
        return OK

    def _processes(self, name: str, h: Any, count_ref: Any, array: Any, graphics: bool) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        procs = gpu.graphics_processes if graphics else gpu.processes
        count = _out(count_ref)
        if array is None:
            count.value = len(procs)
            return OK if not procs else INSUFFICIENT_SIZE
        if count.value < len(procs):
            count.value = len(procs)
            return INSUFFICIENT_SIZE
        # Fill the caller's buffer in the driver's layout, as the real library does.
        layout = DriverProcessInfoV2 if name.endswith(("_v2", "_v3")) else DriverProcessInfoV1
        entries = ctypes.cast(array, ctypes.POINTER(layout))
        for i, proc in enumerate(procs):
            entries[i].pid = proc.pid
            entries[i].usedGpuMemory = proc.used_memory
            if layout is DriverProcessInfoV2:
                entries[i].gpuInstanceId = entries[i].computeInstanceId = 0xFFFFFFFF
        count.value = len(procs)
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
        ctypes.cast(
            ctypes.pointer(_out(ref)), ctypes.POINTER(ctypes.c_void_p)
        ).contents.value = self._gpm_next
        self._gpm_next += 1
        return OK

    def fn_nvmlGpmSampleFree(self, name: str, sample: Any) -> int:
        return OK

    def fn_nvmlGpmSampleGet(self, name: str, h: Any, sample: Any) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        self._last_gpm_gpu = gpu
        return OK

    def fn_nvmlGpmMetricsGet(self, name: str, ref: Any) -> int:
        request = _out(ref)
        gpu: FakeGpu = self._last_gpm_gpu
        by_id = {2: gpu.gpm_values[0], 5: gpu.gpm_values[1]}
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            metric.nvmlReturn = OK
            metric.value = by_id[metric.metricId]
        return OK


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
