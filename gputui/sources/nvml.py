"""The live source: NVIDIA's NVML through nvidia-ml-py. The only module importing pynvml.

Every NVML call goes through ``_call``: an error on one field (not supported on this
board, no permission, a function an old driver lacks) makes that field None and nothing
else; a lost GPU is marked lost and the other GPUs keep being read.
"""

from __future__ import annotations

import contextlib
import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pynvml

from gputui.model import DeviceInfo, Frame, GpuSample, Note, ProcessSample
from gputui.names import NoteKind, SourceKind
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
# What 12.550+ raises from an unversioned wrapper whose symbol the driver lacks; ``_first``
# moves on to the next call when it sees it.
_LIBRARY_MISMATCH = _exception("NVMLLibraryMismatchError")

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

# Read in one nvmlDeviceGetFieldValues call per GPU per tick.
FI_REPLAY = 94  # NVML_FI_DEV_PCIE_REPLAY_COUNTER
FI_ECC_SBE_VOL = 3  # NVML_FI_DEV_ECC_SBE_VOL_TOTAL
FI_ECC_DBE_VOL = 4  # NVML_FI_DEV_ECC_DBE_VOL_TOTAL
FI_REMAPPED_PENDING = 144  # NVML_FI_DEV_REMAPPED_PENDING
FI_PCIE_TX_BYTES = _constant("NVML_FI_DEV_PCIE_COUNT_TX_BYTES", 197)  # cumulative
FI_PCIE_RX_BYTES = _constant("NVML_FI_DEV_PCIE_COUNT_RX_BYTES", 198)  # cumulative
FI_MEMORY_TEMP = 82  # NVML_FI_DEV_MEMORY_TEMP
_FIELDS = (
    FI_REPLAY,
    FI_ECC_SBE_VOL,
    FI_ECC_DBE_VOL,
    FI_REMAPPED_PENDING,
    FI_PCIE_TX_BYTES,
    FI_PCIE_RX_BYTES,
    FI_MEMORY_TEMP,
)

_GPM_SM_UTIL = 2  # NVML_GPM_METRIC_SM_UTIL
_GPM_ANY_TENSOR_UTIL = 5  # NVML_GPM_METRIC_ANY_TENSOR_UTIL

_THROUGHPUT_UNIT = 1024  # nvmlDeviceGetPcieThroughput reports KiB/s


class _GpuLost(Exception):
    pass


class _ProcessInfoV1(ctypes.Structure):
    """nvmlProcessInfo_v1_t, what the unversioned process functions fill (pid, memory)."""

    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong)]


class _ProcessInfoV2(ctypes.Structure):
    """nvmlProcessInfo_v2_t, what the _v2 and _v3 process functions fill (24 bytes)."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


# Newest first; each symbol with the struct the driver fills for it.
_PROCESS_VERSIONS: tuple[tuple[str, type[ctypes.Structure]], ...] = (
    ("_v3", _ProcessInfoV2),
    ("_v2", _ProcessInfoV2),
    ("", _ProcessInfoV1),
)
# Drivers 535.43-535.86 filled _v3 with 32-byte entries (an extra usedGpuCcProtectedMemory):
# the buffer leaves room for those so that such a driver cannot write past its end.
_PROCESS_ENTRY_ROOM = 32


def _error_code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def _clean(value: int | None) -> int | None:
    if value is None or value in _SENTINELS:
        return None
    return int(value)


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


@dataclass
class _Gpu:
    """Per-GPU state kept between ticks: the handle, and what must be remembered."""

    index: int
    handle: Any
    lost: bool = False
    use_counters: bool = True
    last_counters: tuple[float, int, int] | None = None
    gpm_supported: bool = False
    gpm_sample: Any = None
    costs: list[float] = field(default_factory=list)


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
    ) -> None:
        self._host = host
        self._clock = clock
        self._monotonic = monotonic
        self._fallback_throughput = pcie_throughput_fallback
        self._gpus: list[_Gpu] = []
        self._open = False
        #: NVML calls the last ``read`` made per GPU (benchmarks/tick_cost.py prints them).
        self.last_calls: dict[int, int] = {}
        self._calls = 0

    # -- the per-field wrapper -------------------------------------------------
    def _call(self, fn: Callable[..., T], *args: Any) -> T | None:
        self._calls += 1
        try:
            return fn(*args)
        except pynvml.NVMLError as exc:
            if _error_code(exc) in _LOST_CODES:
                raise _GpuLost from exc
            return None

    def _first(self, calls: Sequence[tuple[str, tuple[Any, ...]]]) -> Any:
        """The first of several equivalent calls that the loaded driver has."""
        for name, args in calls:
            fn = _function(name)
            if fn is None:
                continue
            self._calls += 1
            try:
                return fn(*args)
            except pynvml.NVMLError as exc:
                code = _error_code(exc)
                if code in _LOST_CODES:
                    raise _GpuLost from exc
                if code == pynvml.NVML_ERROR_FUNCTION_NOT_FOUND:
                    continue
                return None
            except _LIBRARY_MISMATCH:
                continue
        return None

    # -- lifecycle ---------------------------------------------------------------
    def open(self) -> tuple[DeviceInfo, ...]:
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise SourceUnavailable(_init_failure(exc)) from exc
        self._open = True
        try:
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            self.close()
            raise SourceUnavailable(f"NVML could not count the GPUs ({exc}).") from exc
        driver = self._call(pynvml.nvmlSystemGetDriverVersion)
        cuda = self._first(
            [("nvmlSystemGetCudaDriverVersion_v2", ()), ("nvmlSystemGetCudaDriverVersion", ())]
        )
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
                devices.append(self._device_info(gpu, driver, cuda))
            except _GpuLost:
                gpu.lost = True
                devices.append(DeviceInfo(index=index, name="lost GPU"))
        return tuple(devices)

    def close(self) -> None:
        if not self._open:
            return
        for gpu in self._gpus:
            if gpu.gpm_sample is not None:
                with contextlib.suppress(pynvml.NVMLError):
                    pynvml.nvmlGpmSampleFree(gpu.gpm_sample)
                gpu.gpm_sample = None
        self._open = False
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()

    # -- static facts ------------------------------------------------------------
    def _device_info(self, gpu: _Gpu, driver: Any, cuda: Any) -> DeviceInfo:
        h = gpu.handle
        c = self._call
        name = c(pynvml.nvmlDeviceGetName, h)
        uuid = c(pynvml.nvmlDeviceGetUUID, h)
        pci = c(pynvml.nvmlDeviceGetPciInfo, h)
        arch = c(pynvml.nvmlDeviceGetArchitecture, h)
        cc = c(pynvml.nvmlDeviceGetCudaComputeCapability, h)
        memory = self._memory(h)
        constraints = c(pynvml.nvmlDeviceGetPowerManagementLimitConstraints, h)
        mig = c(pynvml.nvmlDeviceGetMigMode, h)
        ecc = c(pynvml.nvmlDeviceGetEccMode, h)
        persistence = c(pynvml.nvmlDeviceGetPersistenceMode, h)
        compute_mode = c(pynvml.nvmlDeviceGetComputeMode, h)
        gpm = self._first([("nvmlGpmQueryDeviceSupport", (h,))])
        gpu.gpm_supported = bool(gpm is not None and gpm.isSupportedDevice)

        def clock(kind: int) -> int | None:
            return _clean(c(pynvml.nvmlDeviceGetMaxClockInfo, h, kind))

        def default_app(kind: int) -> int | None:
            return _clean(c(pynvml.nvmlDeviceGetDefaultApplicationsClock, h, kind))

        def threshold(kind: int) -> float | None:
            value = _clean(c(pynvml.nvmlDeviceGetTemperatureThreshold, h, kind))
            return float(value) if value else None

        def watts(fn: Callable[..., int]) -> float | None:
            value = _clean(c(fn, h))
            return value / 1000.0 if value else None

        return DeviceInfo(
            index=gpu.index,
            name=_text(name) if name is not None else f"GPU {gpu.index}",
            uuid=_text(uuid) if uuid is not None else None,
            pci_bus_id=_text(pci.busId) if pci is not None else None,
            architecture=_ARCHITECTURES.get(arch) if arch is not None else None,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
            memory_total=int(memory.total) if memory is not None else None,
            max_sm_clock_mhz=clock(pynvml.NVML_CLOCK_SM),
            max_mem_clock_mhz=clock(pynvml.NVML_CLOCK_MEM),
            max_graphics_clock_mhz=clock(pynvml.NVML_CLOCK_GRAPHICS),
            default_app_sm_clock_mhz=default_app(pynvml.NVML_CLOCK_SM),
            default_app_mem_clock_mhz=default_app(pynvml.NVML_CLOCK_MEM),
            temp_slowdown_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
            temp_shutdown_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
            temp_gpu_max_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX),
            temp_mem_max_c=threshold(pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX),
            power_limit_w=watts(pynvml.nvmlDeviceGetEnforcedPowerLimit),
            power_default_limit_w=watts(pynvml.nvmlDeviceGetPowerManagementDefaultLimit),
            power_min_limit_w=constraints[0] / 1000.0 if constraints else None,
            power_max_limit_w=constraints[1] / 1000.0 if constraints else None,
            pcie_max_gen=_clean(c(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, h)),
            pcie_max_width=_clean(c(pynvml.nvmlDeviceGetMaxPcieLinkWidth, h)),
            pcie_gpu_max_gen=_clean(self._first([("nvmlDeviceGetGpuMaxPcieLinkGeneration", (h,))])),
            persistence_mode=bool(persistence) if persistence is not None else None,
            compute_mode=_COMPUTE_MODES.get(compute_mode) if compute_mode is not None else None,
            mig_mode=bool(mig[0]) if mig is not None else None,
            ecc_enabled=bool(ecc[0]) if ecc is not None else None,
            driver_version=_text(driver) if driver is not None else None,
            cuda_driver_version=_cuda_version(cuda),
            gpm_supported=gpu.gpm_supported,
        )

    def _memory(self, handle: Any) -> Any:
        # The v2 struct matches nvidia-smi's "used" on recent drivers; v1 for old ones.
        version = getattr(pynvml, "nvmlMemory_v2", None)
        if version is not None:
            self._calls += 1
            try:
                return pynvml.nvmlDeviceGetMemoryInfo(handle, version=version)
            except pynvml.NVMLError as exc:
                code = _error_code(exc)
                if code in _LOST_CODES:
                    raise _GpuLost from exc
                if code not in (
                    pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
                    pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
                ):
                    return None
        return self._call(pynvml.nvmlDeviceGetMemoryInfo, handle)

    # -- one tick ----------------------------------------------------------------
    def read(self) -> Frame:
        now = self._clock()
        samples: list[GpuSample] = []
        processes: list[GpuProcess] = []
        for gpu in self._gpus:
            if gpu.lost:
                samples.append(GpuSample(index=gpu.index, lost=True))
                continue
            self._calls = 0
            try:
                samples.append(self._sample(gpu))
                processes.extend(self._processes(gpu))
            except _GpuLost:
                gpu.lost = True
                samples.append(GpuSample(index=gpu.index, lost=True))
            self.last_calls[gpu.index] = self._calls
        notes: tuple[Note, ...] = ()
        if self._host is None:
            procs = tuple(
                ProcessSample(
                    pid=p.pid, gpu_index=p.gpu_index, gpu_memory=p.gpu_memory, kind=p.kind
                )
                for p in processes
            )
            host = None
        else:
            procs, notes = self._host.join_processes(processes)
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
        return Frame(time=now, gpus=tuple(samples), host=host, processes=procs, notes=notes)

    def _sample(self, gpu: _Gpu) -> GpuSample:
        h = gpu.handle
        c = self._call
        util = c(pynvml.nvmlDeviceGetUtilizationRates, h)
        memory = self._memory(h)
        temp = self._first(
            [
                ("nvmlDeviceGetTemperatureV", (h, pynvml.NVML_TEMPERATURE_GPU)),
                ("nvmlDeviceGetTemperature", (h, pynvml.NVML_TEMPERATURE_GPU)),
            ]
        )
        reasons = self._first(
            [
                ("nvmlDeviceGetCurrentClocksEventReasons", (h,)),
                ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,)),
            ]
        )
        power_mw = _clean(c(pynvml.nvmlDeviceGetPowerUsage, h))
        limit_mw = _clean(c(pynvml.nvmlDeviceGetEnforcedPowerLimit, h))
        energy_mj = _clean(c(pynvml.nvmlDeviceGetTotalEnergyConsumption, h))
        fan = _clean(c(pynvml.nvmlDeviceGetFanSpeed, h))
        pstate = _clean(c(pynvml.nvmlDeviceGetPerformanceState, h))
        margin = self._first([("nvmlDeviceGetMarginTemperature", (h,))])
        fields = self._field_values(h)
        rx, tx = self._pcie_rates(gpu, fields)
        sm_activity, tensor_activity = self._gpm(gpu)
        used = int(memory.used) if memory is not None else None
        total = int(memory.total) if memory is not None else None
        if used is not None and total is not None and used > total:
            used = None  # a reading no card can give: unknown, not "over 100 %"
        mem_temp = fields.get(FI_MEMORY_TEMP)
        sbe = fields.get(FI_ECC_SBE_VOL)
        dbe = fields.get(FI_ECC_DBE_VOL)
        replay = fields.get(FI_REPLAY)
        if replay is None:
            replay = _clean(c(pynvml.nvmlDeviceGetPcieReplayCounter, h))
        pending = fields.get(FI_REMAPPED_PENDING)
        return GpuSample(
            index=gpu.index,
            util_gpu=_percent(util.gpu) if util is not None else None,
            util_mem=_percent(util.memory) if util is not None else None,
            sm_activity=sm_activity,
            tensor_activity=tensor_activity,
            sm_clock_mhz=_clean(c(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM)),
            mem_clock_mhz=_clean(c(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM)),
            graphics_clock_mhz=_clean(
                c(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_GRAPHICS)
            ),
            app_sm_clock_mhz=_clean(
                c(pynvml.nvmlDeviceGetApplicationsClock, h, pynvml.NVML_CLOCK_SM)
            ),
            temp_c=_celsius(temp),
            mem_temp_c=_celsius(mem_temp) if mem_temp else None,
            temp_margin_c=float(margin) if margin is not None and -100 < margin < 200 else None,
            fan_pct=_percent(fan),
            power_w=power_mw / 1000.0 if power_mw is not None else None,
            power_limit_w=limit_mw / 1000.0 if limit_mw else None,
            pstate=pstate if pstate is not None and pstate <= 15 else None,
            clock_reasons=int(reasons) if reasons is not None else None,
            mem_used=used,
            mem_free=int(memory.free) if memory is not None else None,
            mem_total=total,
            pcie_gen=_clean(c(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h)),
            pcie_width=_clean(c(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h)),
            pcie_rx_bps=rx,
            pcie_tx_bps=tx,
            pcie_replay_count=replay,
            ecc_volatile_corrected=sbe,
            ecc_volatile_uncorrected=dbe,
            remapped_rows_pending=bool(pending) if pending is not None else None,
            energy_j=energy_mj / 1000.0 if energy_mj is not None else None,
        )

    def _field_values(self, handle: Any) -> dict[int, int]:
        values = self._first([("nvmlDeviceGetFieldValues", (handle, list(_FIELDS)))])
        out: dict[int, int] = {}
        if values is None:
            return out
        for value in values:
            if value.nvmlReturn != pynvml.NVML_SUCCESS:
                continue
            raw = _field_number(value)
            if raw is not None:
                out[int(value.fieldId)] = raw
        return out

    def _pcie_rates(self, gpu: _Gpu, fields: dict[int, int]) -> tuple[float | None, float | None]:
        # Cumulative byte counters cost nothing extra (they ride the field-values call);
        # nvmlDeviceGetPcieThroughput samples a 20 ms window per direction, so it is the
        # fallback for drivers and boards without the counters.
        tx_total = fields.get(FI_PCIE_TX_BYTES)
        rx_total = fields.get(FI_PCIE_RX_BYTES)
        if gpu.use_counters and tx_total is not None and rx_total is not None:
            now = self._monotonic()
            previous = gpu.last_counters
            gpu.last_counters = (now, rx_total, tx_total)
            if previous is None or now <= previous[0]:
                return None, None
            elapsed = now - previous[0]
            rx = (rx_total - previous[1]) / elapsed
            tx = (tx_total - previous[2]) / elapsed
            if rx < 0 or tx < 0:  # counter reset
                return None, None
            return rx, tx
        gpu.use_counters = False
        if not self._fallback_throughput:
            return None, None
        rx_kib = _clean(
            self._call(
                pynvml.nvmlDeviceGetPcieThroughput, gpu.handle, pynvml.NVML_PCIE_UTIL_RX_BYTES
            )
        )
        tx_kib = _clean(
            self._call(
                pynvml.nvmlDeviceGetPcieThroughput, gpu.handle, pynvml.NVML_PCIE_UTIL_TX_BYTES
            )
        )
        return (
            rx_kib * _THROUGHPUT_UNIT if rx_kib is not None else None,
            tx_kib * _THROUGHPUT_UNIT if tx_kib is not None else None,
        )

    def _gpm(self, gpu: _Gpu) -> tuple[float | None, float | None]:
        """SM and tensor activity from GPM (Hopper+): the share of SMs really busy."""
        if not gpu.gpm_supported:
            return None, None
        try:
            current = pynvml.nvmlGpmSampleAlloc()
            pynvml.nvmlGpmSampleGet(gpu.handle, current)
        except pynvml.NVMLError as exc:
            if _error_code(exc) in _LOST_CODES:
                raise _GpuLost from exc
            gpu.gpm_supported = False
            return None, None
        finally:
            self._calls += 2
        previous, gpu.gpm_sample = gpu.gpm_sample, current
        if previous is None:
            return None, None
        try:
            request = pynvml.c_nvmlGpmMetricsGet_t()
            request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = 2
            request.sample1 = previous
            request.sample2 = current
            request.metrics[0].metricId = _GPM_SM_UTIL
            request.metrics[1].metricId = _GPM_ANY_TENSOR_UTIL
            self._calls += 1
            pynvml.nvmlGpmMetricsGet(request)
            values = [
                _percent(request.metrics[i].value) if request.metrics[i].nvmlReturn == 0 else None
                for i in range(2)
            ]
            return values[0], values[1]
        except pynvml.NVMLError:
            return None, None
        finally:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlGpmSampleFree(previous)

    def _processes(self, gpu: _Gpu) -> list[GpuProcess]:
        found: dict[int, GpuProcess] = {}
        for kind, what in (
            ("compute", "ComputeRunningProcesses"),
            ("graphics", "GraphicsRunningProcesses"),
        ):
            for pid, memory in self._process_list(gpu.handle, what) or ():
                existing = found.get(pid)
                if existing is not None:
                    kind_here = existing.kind if existing.kind == kind else "compute+graphics"
                    memory = existing.gpu_memory if existing.gpu_memory is not None else memory
                    found[pid] = GpuProcess(pid, gpu.index, memory, kind_here)
                else:
                    found[pid] = GpuProcess(pid, gpu.index, memory, kind)
        return list(found.values())

    def _process_list(self, handle: Any, what: str) -> list[tuple[int, int | None]] | None:
        """(pid, used memory) per process: the _v3 -> _v2 -> v1 fallback.

        The driver functions are called with this module's own structs, not through
        nvidia-ml-py's wrappers: 12.535.77 reads the _v3 answer as 32-byte entries (with
        usedGpuCcProtectedMemory) where drivers fill 24-byte nvmlProcessInfo_v2_t ones,
        which garbles every process after the first, and releases before 12.550 have no
        _v2 wrappers at all.
        """
        for suffix, struct in _PROCESS_VERSIONS:
            try:
                fn = pynvml._nvmlGetFunctionPointer(f"nvmlDeviceGet{what}{suffix}")
            except pynvml.NVMLError:
                continue  # a driver older than this version of the function
            self._calls += 1
            count = ctypes.c_uint(0)
            ret = fn(handle, ctypes.byref(count), None)
            if ret == pynvml.NVML_ERROR_INSUFFICIENT_SIZE:
                room = count.value * 2 + 5  # processes may start between the two calls
                buffer = (ctypes.c_ubyte * (room * _PROCESS_ENTRY_ROOM))()
                entries = ctypes.cast(buffer, ctypes.POINTER(struct))
                count.value = room
                ret = fn(handle, ctypes.byref(count), entries)
                if ret == pynvml.NVML_SUCCESS:
                    return [
                        (int(entries[i].pid), _clean(int(entries[i].usedGpuMemory)))
                        for i in range(min(count.value, room))
                    ]
            elif ret == pynvml.NVML_SUCCESS:
                return []  # no processes
            if ret in _LOST_CODES:
                raise _GpuLost
            if ret not in (
                pynvml.NVML_ERROR_FUNCTION_NOT_FOUND,
                pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
            ):
                return None
        return None


# nvmlValue_t is a union: which member holds the reading depends on its valueType.
_VALUE_MEMBERS = {
    pynvml.NVML_VALUE_TYPE_DOUBLE: "dVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
    pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
    pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
    pynvml.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
}


def _field_number(value: Any) -> int | None:
    member = _VALUE_MEMBERS.get(int(value.valueType))
    if member is None:
        return None
    raw: float | int = getattr(value.value, member)
    if raw != raw or raw < 0:  # NaN or negative: not a reading
        return None
    return _clean(int(raw))


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
