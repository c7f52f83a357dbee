"""The NVML source through the real nvidia-ml-py code, over a fake libnvidia-ml."""

from __future__ import annotations

import ast
import ctypes
import dataclasses
import importlib
import sys
from pathlib import Path
from types import ModuleType

import pynvml
import pytest

import gputui.sources
from gputui.core import clock_events as ce
from gputui.core.manual_clock import ManualClock
from gputui.core.source import SourceUnavailable
from gputui.sources.nvml import NvmlSource
from tests.nvml_double import (
    GPU_NOT_FOUND,
    MIB,
    NO_PERMISSION,
    NOT_SUPPORTED,
    UNKNOWN,
    FakeGpu,
    FakeNvmlLib,
    FakeProcess,
    install,
)


def _source(
    monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib | None, module: ModuleType | None = None
) -> NvmlSource:
    install(monkeypatch, lib)
    mono = ManualClock(1000.0)
    source_class: type[NvmlSource] = NvmlSource if module is None else module.NvmlSource
    source = source_class(host=None, clock=ManualClock(1_700_000_000.0), monotonic=mono)
    source._test_mono = mono  # type: ignore[attr-defined]
    return source


def test_static_facts_and_unit_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(), FakeGpu(bus_id="00000000:2A:00.0")])
    source = _source(monkeypatch, lib)
    devices = source.open()
    assert len(devices) == 2
    d = devices[0]
    assert d.name == "NVIDIA H100 80GB HBM3"
    assert d.pci_bus_id == "00000000:18:00.0" and devices[1].pci_bus_id == "00000000:2A:00.0"
    assert d.architecture == "Hopper" and d.compute_capability == "9.0"
    assert d.memory_total == 81559 * MIB
    assert (d.max_sm_clock_mhz, d.max_mem_clock_mhz) == (1980, 2619)
    assert (d.temp_slowdown_c, d.temp_shutdown_c, d.temp_gpu_max_c) == (89.0, 92.0, 87.0)
    assert d.power_limit_w == 700.0 and d.power_default_limit_w == 700.0  # mW -> W
    assert (d.power_min_limit_w, d.power_max_limit_w) == (200.0, 700.0)
    assert (d.pcie_max_gen, d.pcie_max_width) == (5, 16)
    assert d.driver_version == "550.54.15" and d.cuda_driver_version == "12.4"
    assert d.persistence_mode is True and d.compute_mode == "Default" and d.mig_mode is False


def test_sample_values_and_units(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(reasons=ce.SW_POWER_CAP | ce.SW_THERMAL)
    lib = FakeNvmlLib([gpu])
    source = _source(monkeypatch, lib)
    source.open()
    first = source.read().gpus[0]
    assert first.util_gpu == 97.0 and first.util_mem == 41.0
    assert first.sm_clock_mhz == 1755 and first.mem_clock_mhz == 2619
    # the margin needs nvmlDeviceGetMarginTemperature, a wrapper nvidia-ml-py has from 12.570
    margin = 18.0 if hasattr(pynvml, "nvmlDeviceGetMarginTemperature") else None
    assert first.temp_c == 71.0 and first.temp_margin_c == margin and first.mem_temp_c == 77.0
    assert first.power_w == pytest.approx(612.345) and first.power_limit_w == 700.0
    assert first.energy_j == pytest.approx(123_456.789)  # mJ -> J
    assert first.mem_used == 40000 * MIB  # the v2 struct, as nvidia-smi reports
    assert first.mem_total == 81559 * MIB
    assert first.reason_names == ("sw_thermal", "sw_power_cap")
    assert (first.pcie_gen, first.pcie_width, first.pcie_replay_count) == (5, 16, 3)
    assert first.pcie_rx_bps is None  # rates need two readings of the byte counters
    # one second later 2 GB more came in and 0.5 GB went out
    source._test_mono.advance(1.0)  # type: ignore[attr-defined]
    gpu.pcie_rx_total += 2_000_000_000
    gpu.pcie_tx_total += 500_000_000
    second = source.read().gpus[0]
    assert second.pcie_rx_bps == pytest.approx(2.0e9)
    assert second.pcie_tx_bps == pytest.approx(0.5e9)
    assert "nvmlDeviceGetPcieThroughput" not in lib.calls  # counters cost no 20 ms window


def test_readings_no_card_can_give_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    # what a broken driver or a GPU falling off the bus hands back: all ones, not readings
    gpu = FakeGpu(power_mw=0xFFFFFFFF * 1000, temperature=0xFFFFFFFF, util=(255, 41))
    source = _source(monkeypatch, FakeNvmlLib([gpu]))
    source.open()
    sample = source.read().gpus[0]
    assert sample.power_w is None and sample.temp_c is None and sample.util_gpu is None
    assert sample.util_mem == 41.0 and sample.sm_clock_mhz == 1755  # the rest still read


def test_pcie_throughput_fallback_without_counters(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(field_errors={197: NOT_SUPPORTED, 198: NOT_SUPPORTED})])
    source = _source(monkeypatch, lib)
    source.open()
    first = source.read().gpus[0]
    assert first.pcie_rx_bps is None and first.pcie_counter_based is None  # window in flight
    source.wait_windows()
    sample = source.read().gpus[0]
    assert sample.pcie_rx_bps == 2_000_000 * 1024  # KiB/s -> bytes/s
    assert sample.pcie_tx_bps == 300_000 * 1024
    assert sample.pcie_counter_based is False  # sampled, and the screen says so
    source.close()


def test_fan_not_supported_on_data_centre_card(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(errors={"nvmlDeviceGetFanSpeed": NOT_SUPPORTED})])
    source = _source(monkeypatch, lib)
    source.open()
    sample = source.read().gpus[0]
    assert sample.fan_pct is None  # n/a, never 0 %
    assert sample.temp_c == 71.0  # the rest still read


def test_no_permission_and_unknown_errors_are_per_field(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib(
        [
            FakeGpu(
                errors={
                    "nvmlDeviceGetPowerUsage": NO_PERMISSION,
                    "nvmlDeviceGetUtilizationRates": UNKNOWN,
                    "nvmlDeviceGetTemperatureThreshold": NO_PERMISSION,
                }
            )
        ]
    )
    source = _source(monkeypatch, lib)
    (device,) = source.open()
    assert device.temp_slowdown_c is None and device.name.startswith("NVIDIA")
    sample = source.read().gpus[0]
    assert sample.power_w is None and sample.util_gpu is None
    assert sample.sm_clock_mhz == 1755 and not sample.lost


def test_every_field_not_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    names = [n[3:] for n in dir(FakeNvmlLib) if n.startswith("fn_nvmlDevice") and "Handle" not in n]
    gpu = FakeGpu(errors={n: NOT_SUPPORTED for n in names if n != "nvmlDeviceGetCount_v2"})
    source = _source(monkeypatch, FakeNvmlLib([gpu]))
    (device,) = source.open()
    assert device.name == "GPU 0" and device.memory_total is None
    sample = source.read().gpus[0]
    readings = {
        f.name: getattr(sample, f.name)
        for f in dataclasses.fields(sample)
        if f.name not in ("index", "lost", "unsupported")
    }
    assert all(v is None or v == () for v in readings.values()), readings
    assert not sample.lost
    # every reading of the board is said to be not offered (the rules then do not apply),
    # but for the lists that are merely empty (no Xid, no MIG instance, no NVLink); PCIe
    # throughput once its first sampled window has said so
    source.wait_windows()
    sample = source.read().gpus[0]
    lists = {"xid_events", "mig_instances", "nvlinks", "nvlink_errors", "pcie_counter_based"}
    assert set(sample.unsupported) == set(readings) - lists - {"mem_reserved"}
    assert {"numa_node", "pcie_max_gen", "temp_slowdown_c"} <= set(device.unsupported)


def test_gpu_lost_mid_run_keeps_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(), FakeGpu(), FakeGpu()]
    source = _source(monkeypatch, FakeNvmlLib(gpus))
    source.open()
    assert not any(s.lost for s in source.read().gpus)
    gpus[1].lost = True
    frame = source.read()
    assert [s.lost for s in frame.gpus] == [False, True, False]
    assert frame.gpus[0].temp_c == 71.0 and frame.gpus[2].temp_c == 71.0
    assert any("fell off the bus" in note.text for note in frame.notes)
    assert [p.gpu_index for p in frame.processes] == [0, 2]
    # a lost GPU stays lost: it is not polled again
    gpus[1].lost = False
    assert source.read().gpus[1].lost


def test_old_driver_without_v2_v3_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = {
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v2",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetTemperatureV",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetMarginTemperature",
        "nvmlSystemGetCudaDriverVersion_v2",
        "nvmlGpmQueryDeviceSupport",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    }
    gpu = FakeGpu(
        reasons=ce.HW_SLOWDOWN,
        processes=[FakeProcess(11, 1000 * MIB), FakeProcess(12, 2000 * MIB)],
        graphics_processes=[FakeProcess(12, 2000 * MIB)],
    )
    lib = FakeNvmlLib([gpu], missing=missing)
    source = _source(monkeypatch, lib)
    (device,) = source.open()
    assert device.cuda_driver_version == "12.4"
    frame = source.read()
    sample = frame.gpus[0]
    assert sample.temp_c == 71.0  # nvmlDeviceGetTemperature
    assert sample.reason_names == ("hw_slowdown",)  # the older throttle-reasons name
    assert sample.mem_used == 40500 * MIB  # v1 memory info
    assert sample.temp_margin_c is None
    procs = {p.pid: p for p in frame.processes}
    assert procs[11].gpu_memory == 1000 * MIB and procs[11].kind == "compute"
    assert procs[12].kind == "compute+graphics"
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses"] >= 1  # the v1 struct


def test_v2_process_list_when_v3_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu()], missing={"nvmlDeviceGetComputeRunningProcesses_v3"})
    source = _source(monkeypatch, lib)
    source.open()
    (proc,) = source.read().processes
    assert proc.pid == 4242 and proc.gpu_memory == 39000 * MIB
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in lib.calls


def test_driver_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _source(monkeypatch, None)
    with pytest.raises(SourceUnavailable, match="No NVIDIA driver") as info:
        source.open()
    assert "--demo" in str(info.value)


def test_driver_library_version_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([], init_error=pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    source = _source(monkeypatch, lib)
    with pytest.raises(SourceUnavailable, match="different versions"):
        source.open()


def test_gpm_sm_and_tensor_activity(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(gpm=True)])
    source = _source(monkeypatch, lib)
    (device,) = source.open()
    assert device.gpm_supported is True
    assert source.read().gpus[0].sm_activity is None  # GPM needs two samples
    source._test_mono.advance(2.0)  # type: ignore[attr-defined]  # GPM_PERIOD_S
    second = source.read().gpus[0]
    assert second.sm_activity == 78.5 and second.tensor_activity == 41.0


def test_sentinels_and_impossible_readings_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(temperature=0xFFFFFFFF, memory_used=90000 * MIB, power_mw=0xFFFFFFFF)
    gpu.util = (0xFFFFFFFF, 250)
    source = _source(monkeypatch, FakeNvmlLib([gpu]))
    source.open()
    sample = source.read().gpus[0]
    assert sample.temp_c is None and sample.power_w is None
    assert sample.mem_used is None  # used > total
    assert sample.util_gpu is None and sample.util_mem is None


def test_init_once_and_shutdown_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu()])
    source = _source(monkeypatch, lib)
    source.open()
    for _ in range(5):
        source.read()
    assert lib.calls["nvmlInitWithFlags"] == 1
    source.close()
    source.close()
    assert lib.calls["nvmlShutdown"] == 1 and lib.initialised == 0


def test_cost_bookkeeping(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _source(monkeypatch, FakeNvmlLib([FakeGpu(), FakeGpu()]))
    source.open()
    source.read()
    assert set(source.last_calls) == {0, 1}
    assert 10 <= source.last_calls[0] <= 30  # the first tick reads the slower readings too


# -- older nvidia-ml-py releases ---------------------------------------------------------
# pyproject allows nvidia-ml-py>=12.535; 12.535.77, the oldest, lacks these names (the nvml
# package reads them through bindings.constant/function/exception). The tests below take
# them away from whatever release is installed, so the floor is covered wherever they run.
FLOOR_MISSING = (
    "NVML_ERROR_GPU_NOT_FOUND",  # 12.550
    "NVMLLibraryMismatchError",  # 12.550
    "nvmlDeviceGetComputeRunningProcesses_v2",  # 12.550
    "nvmlDeviceGetGraphicsRunningProcesses_v2",  # 12.550
    "c_nvmlProcessInfo_v2_t",  # 12.535.108
    "c_nvmlProcessInfo_v3_t",  # 12.550
    "NVML_FI_DEV_PCIE_COUNT_TX_BYTES",  # 12.555
    "NVML_FI_DEV_PCIE_COUNT_RX_BYTES",  # 12.555
    "NVML_DEVICE_ARCH_BLACKWELL",  # 12.560
    "nvmlDeviceGetTemperatureV",  # 12.570
    "nvmlDeviceGetMarginTemperature",  # 12.570
)


class FloorProcessInfo(ctypes.Structure):
    """12.535.77's c_nvmlProcessInfo_t: 32 bytes, where drivers fill 24-byte entries."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
        ("usedGpuCcProtectedMemory", ctypes.c_ulonglong),
    ]


def _nvml_without(monkeypatch: pytest.MonkeyPatch, *names: str) -> ModuleType:
    """gputui.sources.nvml (every module of the package) imported afresh over bindings that
    lack ``names``; the modules everything else imported are back in place after the test."""
    for name in names:
        monkeypatch.delattr(pynvml, name, raising=False)
        assert not hasattr(pynvml, name)
    monkeypatch.setattr(gputui.sources, "nvml", sys.modules["gputui.sources.nvml"])
    for module in [m for m in sys.modules if m.startswith("gputui.sources.nvml")]:
        monkeypatch.delitem(sys.modules, module)
    return importlib.import_module("gputui.sources.nvml")


def _floor_process_struct(monkeypatch: pytest.MonkeyPatch) -> None:
    """The _v3 process wrappers' struct becomes 12.535.77's, whichever name they use."""
    for name in ("c_nvmlProcessInfo_t", "c_nvmlProcessInfo_v3_t"):
        if hasattr(pynvml, name):
            monkeypatch.setattr(pynvml, name, FloorProcessInfo)


def test_nvml_module_names_no_binding_older_releases_lack() -> None:
    import gputui.sources.nvml as nvml

    used = {
        node.attr
        for path in Path(nvml.__file__).parent.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "pynvml"
    }
    assert "nvmlInit" in used  # the walk saw the package's modules
    assert used.isdisjoint(FLOOR_MISSING), used & set(FLOOR_MISSING)


def test_imports_and_opens_without_gpu_not_found_code(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(monkeypatch, "NVML_ERROR_GPU_NOT_FOUND")
    gpus = [FakeGpu(), FakeGpu()]
    source = _source(monkeypatch, FakeNvmlLib(gpus), nvml)
    devices = source.open()
    assert [d.name for d in devices] == ["NVIDIA H100 80GB HBM3"] * 2
    # the driver's code 28 still means the GPU is gone, with or without the binding's name
    gpus[1].errors = {"nvmlDeviceGetUtilizationRates": GPU_NOT_FOUND}
    assert [s.lost for s in source.read().gpus] == [False, True]


def test_fallbacks_without_library_mismatch_error_class(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(monkeypatch, "NVMLLibraryMismatchError")
    missing = {
        "nvmlDeviceGetTemperatureV",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlSystemGetCudaDriverVersion_v2",
        "nvmlDeviceGetComputeRunningProcesses_v3",
    }
    lib = FakeNvmlLib([FakeGpu(reasons=ce.HW_SLOWDOWN)], missing=missing)
    source = _source(monkeypatch, lib, nvml)
    (device,) = source.open()
    assert device.cuda_driver_version == "12.4"
    frame = source.read()
    assert frame.gpus[0].temp_c == 71.0 and frame.gpus[0].reason_names == ("hw_slowdown",)
    assert [p.pid for p in frame.processes] == [4242]


def test_v2_process_lists_without_v2_wrappers(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(
        monkeypatch,
        "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetGraphicsRunningProcesses_v2",
    )
    gpu = FakeGpu(
        processes=[FakeProcess(11, 1000 * MIB), FakeProcess(12, 2000 * MIB)],
        graphics_processes=[FakeProcess(13, 30 * MIB)],
    )
    missing = {
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetGraphicsRunningProcesses_v3",
    }
    lib = FakeNvmlLib([gpu], missing=missing)
    source = _source(monkeypatch, lib, nvml)
    source.open()
    procs = {p.pid: (p.gpu_memory, p.kind) for p in source.read().processes}
    assert procs == {
        11: (1000 * MIB, "compute"),
        12: (2000 * MIB, "compute"),
        13: (30 * MIB, "graphics"),
    }
    # the driver's _v2 functions, though the bindings have no wrappers for them
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in lib.calls
    assert "nvmlDeviceGetComputeRunningProcesses" not in lib.calls


def test_many_processes_with_floor_process_struct(monkeypatch: pytest.MonkeyPatch) -> None:
    # 12.535.77 reads the _v3 answer with a 32-byte struct: from the second process on it
    # would read the driver's 24-byte entries out of step
    _floor_process_struct(monkeypatch)
    gpu = FakeGpu(
        processes=[FakeProcess(100 + i, (i + 1) * 1000 * MIB) for i in range(5)],
        graphics_processes=[FakeProcess(104, 5000 * MIB), FakeProcess(200, 7 * MIB)],
    )
    lib = FakeNvmlLib([gpu])
    source = _source(monkeypatch, lib)
    source.open()
    procs = {p.pid: (p.gpu_memory, p.kind) for p in source.read().processes}
    assert procs == {
        100: (1000 * MIB, "compute"),
        101: (2000 * MIB, "compute"),
        102: (3000 * MIB, "compute"),
        103: (4000 * MIB, "compute"),
        104: (5000 * MIB, "compute+graphics"),
        200: (7 * MIB, "graphics"),
    }
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in lib.calls


def test_temperature_without_temperature_v_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(monkeypatch, "nvmlDeviceGetTemperatureV")
    lib = FakeNvmlLib([FakeGpu()])
    source = _source(monkeypatch, lib, nvml)
    source.open()
    assert source.read().gpus[0].temp_c == 71.0
    assert "nvmlDeviceGetTemperature" in lib.calls
    assert "nvmlDeviceGetTemperatureV" not in lib.calls


def test_margin_unknown_without_margin_temperature_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nvml = _nvml_without(monkeypatch, "nvmlDeviceGetMarginTemperature")
    lib = FakeNvmlLib([FakeGpu()])
    source = _source(monkeypatch, lib, nvml)
    source.open()
    sample = source.read().gpus[0]
    assert sample.temp_margin_c is None  # not supported by these bindings
    assert sample.temp_c == 71.0 and sample.power_w == pytest.approx(612.345)
    assert "nvmlDeviceGetMarginTemperature" not in lib.calls


def test_pcie_byte_counters_without_their_field_names(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(
        monkeypatch, "NVML_FI_DEV_PCIE_COUNT_TX_BYTES", "NVML_FI_DEV_PCIE_COUNT_RX_BYTES"
    )
    assert (nvml.bindings.FI_PCIE_TX_BYTES, nvml.bindings.FI_PCIE_RX_BYTES) == (
        197,
        198,
    )  # nvml.h's ids
    gpu = FakeGpu()
    lib = FakeNvmlLib([gpu])
    source = _source(monkeypatch, lib, nvml)
    source.open()
    source.read()
    source._test_mono.advance(2.0)  # type: ignore[attr-defined]
    gpu.pcie_rx_total += 4_000_000_000
    gpu.pcie_tx_total += 1_000_000_000
    sample = source.read().gpus[0]
    assert sample.pcie_rx_bps == pytest.approx(2.0e9)
    assert sample.pcie_tx_bps == pytest.approx(0.5e9)
    assert "nvmlDeviceGetPcieThroughput" not in lib.calls


def test_blackwell_without_its_architecture_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = _nvml_without(monkeypatch, "NVML_DEVICE_ARCH_BLACKWELL")
    source = _source(monkeypatch, FakeNvmlLib([FakeGpu(arch=10, cc=(10, 0))]), nvml)
    (device,) = source.open()
    assert device.architecture == "Blackwell" and device.compute_capability == "10.0"


def test_floor_bindings_read_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """All of 12.535.77's gaps at once, over a current driver."""
    _floor_process_struct(monkeypatch)
    nvml = _nvml_without(monkeypatch, *FLOOR_MISSING)
    gpus = [
        FakeGpu(
            gpm=True,
            reasons=ce.SW_POWER_CAP,
            processes=[FakeProcess(11, 1000 * MIB), FakeProcess(12, 2000 * MIB)],
            graphics_processes=[FakeProcess(12, 2000 * MIB)],
        ),
        FakeGpu(arch=10),
    ]
    lib = FakeNvmlLib(gpus)
    source = _source(monkeypatch, lib, nvml)
    devices = source.open()
    assert [d.architecture for d in devices] == ["Hopper", "Blackwell"]
    assert devices[0].memory_total == 81559 * MIB and devices[0].pcie_gpu_max_gen == 5
    assert devices[0].gpm_supported is True
    source.read()
    source._test_mono.advance(2.0)  # type: ignore[attr-defined]
    gpus[0].pcie_rx_total += 4_000_000_000
    frame = source.read()
    first = frame.gpus[0]
    assert first.temp_c == 71.0 and first.temp_margin_c is None and first.mem_temp_c == 77.0
    assert first.mem_used == 40000 * MIB  # the v2 memory struct, which 12.535.77 has
    assert first.reason_names == ("sw_power_cap",)
    assert first.pcie_rx_bps == pytest.approx(2.0e9)
    assert first.sm_activity == 78.5 and first.tensor_activity == 41.0
    procs = {(p.gpu_index, p.pid): (p.gpu_memory, p.kind) for p in frame.processes}
    assert procs == {
        (0, 11): (1000 * MIB, "compute"),
        (0, 12): (2000 * MIB, "compute+graphics"),
        (1, 4242): (39000 * MIB, "compute"),
    }
    gpus[1].errors = {"nvmlDeviceGetPowerUsage": GPU_NOT_FOUND}
    assert [s.lost for s in source.read().gpus] == [False, True]
    source.close()
    assert lib.initialised == 0
