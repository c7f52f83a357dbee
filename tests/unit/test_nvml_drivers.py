"""The NVML source on the drivers people run (R535 to R580, MIG included), over the fake
libnvidia-ml of tests/nvml_double.py: one test per trap of issue 11, named for it."""

from __future__ import annotations

import ctypes
import gc
import threading
from collections import Counter

import pynvml
import pytest

from gputui.advisor import make_monitor
from gputui.core import clock_events as ce
from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import SourceInfo
from gputui.core.names import RuleId, SourceKind
from gputui.sources.nvml import NvmlSource, bindings, policy
from gputui.sources.nvml.policy import Verdict, meaning
from gputui.sources.nvml.sample import VIOLATION_PERIOD_S
from gputui.sources.nvml.source import MAX_EVENTS_PER_READ
from tests.nvml_double import (
    GPU_NOT_FOUND,
    MIB,
    NO_PERMISSION,
    NOT_SUPPORTED,
    UNKNOWN,
    FakeGpu,
    FakeMig,
    FakeNvmlLib,
    FakeProcess,
    driver,
    install,
)

VERSION_MISMATCH: int = pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH


class Rig:
    """A source over a fake driver, with its clocks in the test's hands."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lib: FakeNvmlLib) -> None:
        install(monkeypatch, lib)
        self.lib = lib
        self.mono = ManualClock(1000.0)
        self.wall = ManualClock(1_700_000_000.0)
        self.source = NvmlSource(host=None, clock=self.wall, monotonic=self.mono)
        self.devices = self.source.open()

    def tick(self, seconds: float = 1.0) -> None:
        self.mono.advance(seconds)
        self.wall.advance(seconds)

    def close(self) -> None:
        self.source.close()

    def steady_calls(self, seconds: int = 120) -> Counter[str]:
        """The native calls of ``seconds`` one-second ticks, after a minute of warm-up in
        which every cadence has started."""
        for _ in range(60):
            self.source.read()
            self.source.wait_windows()
            self.tick()
        before = Counter(self.lib.calls)
        for _ in range(seconds):
            self.source.read()
            self.source.wait_windows()
            self.tick()
        made = Counter(self.lib.calls)
        made.subtract(before)
        return made


def three_processes() -> list[FakeProcess]:
    return [
        FakeProcess(31337, 1000 * MIB),
        FakeProcess(31338, 2000 * MIB),
        FakeProcess(32_000, 3000 * MIB),
    ]


# -- one query policy ----------------------------------------------------------------
def test_error_meanings_are_decided_in_one_place() -> None:
    assert meaning(NOT_SUPPORTED) is Verdict.STOP
    assert meaning(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND) is Verdict.STOP
    assert meaning(VERSION_MISMATCH) is Verdict.STOP
    assert meaning(NO_PERMISSION) is Verdict.RETRY
    assert meaning(UNKNOWN) is Verdict.RETRY
    assert meaning(pynvml.NVML_ERROR_GPU_IS_LOST) is Verdict.LOST
    assert meaning(GPU_NOT_FOUND) is Verdict.LOST


def test_not_supported_is_never_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(
        monkeypatch, FakeNvmlLib([FakeGpu(errors={"nvmlDeviceGetPowerUsage": NOT_SUPPORTED})])
    )
    for _ in range(120):
        assert rig.source.read().gpus[0].power_w is None
        rig.tick()
    assert rig.lib.calls["nvmlDeviceGetPowerUsage"] == 1


def test_no_permission_is_na_and_asked_again_slowly(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(errors={"nvmlDeviceGetPowerUsage": NO_PERMISSION})
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    for _ in range(29):
        assert rig.source.read().gpus[0].power_w is None
        rig.tick()
    assert rig.lib.calls["nvmlDeviceGetPowerUsage"] == 1
    gpu.errors = {}  # permission given
    rig.tick(policy.RETRY_AFTER_S)
    assert rig.source.read().gpus[0].power_w == pytest.approx(612.345)


def test_static_facts_read_at_open_not_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, FakeNvmlLib([FakeGpu()]))
    opened = Counter(rig.lib.calls)
    for _ in range(10):
        rig.source.read()
        rig.tick()
    for name in (
        "nvmlDeviceGetName",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetPciInfo_v3",
        "nvmlDeviceGetMaxClockInfo",
        "nvmlDeviceGetTemperatureThreshold",
        "nvmlDeviceGetPowerManagementLimitConstraints",
        "nvmlDeviceGetComputeMode",
        "nvmlDeviceGetEccMode",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlGpmQueryDeviceSupport",
    ):
        assert rig.lib.calls[name] == opened[name], name
    # settings are re-read at most every 30 s (the enforced limit rides the field batch)
    assert rig.lib.calls["nvmlDeviceGetApplicationsClock"] == 1


def test_first_variant_falls_through_on_not_supported_and_version_mismatch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # _first used to fall through only on FUNCTION_NOT_FOUND: a driver that answers the
    # newer call with NOT_SUPPORTED or a version mismatch lost the reading altogether
    gpu = FakeGpu(
        reasons=ce.SW_THERMAL,
        errors={
            "nvmlDeviceGetTemperatureV": VERSION_MISMATCH,
            "nvmlDeviceGetCurrentClocksEventReasons": NOT_SUPPORTED,
            "nvmlDeviceGetMemoryInfo_v2": NOT_SUPPORTED,
        },
    )
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    for _ in range(5):
        sample = rig.source.read().gpus[0]
        rig.tick()
    assert sample.reason_names == ("sw_thermal",) and sample.mem_used == 40500 * MIB
    if hasattr(pynvml, "nvmlDeviceGetTemperatureV"):
        assert sample.temp_c == 71.0
        assert rig.lib.calls["nvmlDeviceGetTemperatureV"] == 1  # resolved once, remembered
    assert rig.lib.calls["nvmlDeviceGetCurrentClocksEventReasons"] == 1


# -- PCIe: counters and sampled windows ------------------------------------------------------
def test_a_glance_leaves_the_throughput_windows_to_the_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lib = driver(535, [FakeGpu() for _ in range(2)])  # no byte counters: sampled windows
    rig = Rig(monkeypatch, lib)
    try:
        rig.source.glance()
        rig.source.wait_windows()
        assert "nvmlDeviceGetPcieThroughput" not in lib.calls and not lib.throughput_threads
        rig.source.read()
        rig.source.wait_windows()
        assert lib.calls["nvmlDeviceGetPcieThroughput"] == 2 * 2  # each GPU's RX and TX
    finally:
        rig.close()


def test_r535_throughput_window_stays_off_the_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = driver(535, [FakeGpu() for _ in range(8)])
    lib.throughput_gate = threading.Event()  # every window blocks until the test says
    rig = Rig(monkeypatch, lib)
    try:
        first = rig.source.read()  # returns while all eight windows are still sampling
        assert all(s.pcie_rx_bps is None and s.pcie_gen == 5 for s in first.gpus)
        rig.tick()
        rig.source.read()  # and again: a window in flight is not waited for
        lib.throughput_gate.set()
        rig.source.wait_windows()
        rig.tick()
        sample = rig.source.read().gpus[3]
        assert sample.pcie_rx_bps == 2_000_000 * 1024 and sample.pcie_counter_based is False
        assert len(lib.throughput_threads) > 1  # GPUs sampled in parallel
        # the window is reused until the next one (THROUGHPUT_PERIOD_S)
        before = lib.calls["nvmlDeviceGetPcieThroughput"]
        rig.tick()
        assert rig.source.read().gpus[3].pcie_rx_bps == 2_000_000 * 1024
        rig.source.wait_windows()
        assert lib.calls["nvmlDeviceGetPcieThroughput"] == before
    finally:
        lib.throughput_gate.set()
        rig.close()


def test_r555_byte_counters_wrap_at_64_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(pcie_rx_total=(1 << 64) - 1_000_000_000, pcie_tx_total=(1 << 64) - 10)
    rig = Rig(monkeypatch, driver(555, [gpu]))
    rig.source.read()
    rig.tick()
    gpu.pcie_rx_total += 3_000_000_000  # past 2**64: the fake reports it modulo 2**64
    gpu.pcie_tx_total += 500_000_000
    sample = rig.source.read().gpus[0]
    assert sample.pcie_rx_bps == pytest.approx(3.0e9)
    assert sample.pcie_tx_bps == pytest.approx(0.5e9)
    assert sample.pcie_counter_based is True
    assert "nvmlDeviceGetPcieThroughput" not in rig.lib.calls


def test_r555_byte_counters_wrap_at_32_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    # a Gen1 x1 link cannot move 4 GiB in a second: one wrap at most, so the rate is exact
    gpu = FakeGpu(
        pcie_counter_bits=32,
        pcie_gen=1,
        pcie_width=1,
        pcie_max_gen=1,
        pcie_max_width=1,
        pcie_rx_total=(1 << 32) - 50_000_000,
        pcie_tx_total=(1 << 32) - 1,
    )
    rig = Rig(monkeypatch, driver(555, [gpu]))
    rig.source.read()
    rig.tick()
    gpu.pcie_rx_total += 200_000_000
    gpu.pcie_tx_total += 1000
    sample = rig.source.read().gpus[0]
    assert sample.pcie_rx_bps == pytest.approx(2.0e8)
    assert sample.pcie_tx_bps == pytest.approx(1000.0)
    assert sample.pcie_counter_based is True


def test_32_bit_counters_on_a_fast_link_give_a_rate_every_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Gen5 x16 link can wrap a 32-bit counter many times a second. The sampled window
    # (every 5 s, off the tick) says about how much moved; the counter says exactly how much
    # within that wrap: a rate every tick, never a gap.
    gpu = FakeGpu(pcie_counter_bits=32, pcie_throughput_kib=(12_000_000, 1_000_000))
    rig = Rig(monkeypatch, driver(555, [gpu]))
    try:
        first = rig.source.read().gpus[0]
        assert first.pcie_rx_bps is None  # no baseline, no window yet
        rig.source.wait_windows()
        rates = []
        for step in range(40):  # longer than a window stays fresh (15 s)
            rig.tick()
            moved = 11_700_000_000 + 250_000_000 * (step % 3)  # 11.7-12.2 GB each second
            gpu.pcie_rx_total += moved
            gpu.pcie_tx_total += 1_020_000_000
            sample = rig.source.read().gpus[0]
            rig.source.wait_windows()
            assert sample.pcie_counter_based is True, step
            rates.append((sample.pcie_rx_bps, moved))
        assert all(rx == pytest.approx(moved) for rx, moved in rates)  # exact, not the window
    finally:
        rig.close()


@pytest.mark.parametrize("in_ull", [False, True], ids=["unsigned-int", "in-a-64-bit-value"])
def test_32_bit_counters_on_a_gen3_link_give_a_rate_every_tick(
    monkeypatch: pytest.MonkeyPatch, in_ull: bool
) -> None:
    """A Gen3 x16 link carrying ~1.7 GB/s: each second the counters move by less than one
    wrap (2**32), and the link could wrap them three times. nvml.h says only that the
    value "can be wrapped": the driver may fill it as an unsigned int or inside a 64-bit
    value; either way every tick has its rate, exact, the wrapping ticks too (issue 50:
    no rate on about half the ticks)."""
    gpu = FakeGpu(
        pcie_counter_bits=32,
        pcie_counter_in_ull=in_ull,
        pcie_gen=3,
        pcie_max_gen=3,
        pcie_rx_total=(1 << 32) - 900_000_000,
        pcie_tx_total=(1 << 32) - 100_000_000,
        pcie_throughput_kib=(1_700_000_000 // 1024, 400_000_000 // 1024),
    )
    rig = Rig(monkeypatch, driver(555, [gpu]))
    try:
        rig.source.read()
        rig.source.wait_windows()
        rates, wraps = [], 0
        for step in range(40):
            rig.tick()
            moved = 1_600_000_000 + 50_000_000 * (step % 5)  # 1.6-1.8 GB each second
            before = gpu.pcie_rx_total % (1 << 32)
            gpu.pcie_rx_total += moved
            gpu.pcie_tx_total += 400_000_000
            wraps += gpu.pcie_rx_total % (1 << 32) < before
            sample = rig.source.read().gpus[0]
            rig.source.wait_windows()
            rates.append((sample.pcie_rx_bps, sample.pcie_tx_bps, moved))
        assert wraps >= 10  # the counter wrapped on a good share of the ticks
        for rx, tx, moved in rates:
            assert rx == pytest.approx(moved) and tx == pytest.approx(4.0e8), rates
    finally:
        rig.close()


def test_a_window_no_link_can_carry_never_makes_up_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The window is 20 ms of traffic: it picks among the wraps the link allows over the
    tick, never more (a Gen3 x16 link moves at most ~16 GB in a second)."""
    gpu = FakeGpu(
        pcie_counter_bits=32,
        pcie_gen=3,
        pcie_max_gen=3,
        pcie_throughput_kib=(60_000_000, 0),  # 61 GB/s: more than any Gen3 link
    )
    rig = Rig(monkeypatch, driver(555, [gpu]))
    try:
        rig.source.read()
        rig.source.wait_windows()
        rig.tick()
        gpu.pcie_rx_total += 2 * (1 << 32) + 1_000_000_000
        rx = rig.source.read().gpus[0].pcie_rx_bps
        assert rx is not None and rx <= 3.0 * 5.5e9  # three wraps at most, never thirteen
    finally:
        rig.close()


def test_32_bit_counters_without_a_recent_window_give_no_guess(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu(pcie_counter_bits=32, errors={"nvmlDeviceGetPcieThroughput": NOT_SUPPORTED})
    rig = Rig(monkeypatch, driver(555, [gpu]))
    try:
        rig.source.read()
        rig.source.wait_windows()
        rig.tick()
        gpu.pcie_rx_total += 5_000_000_000
        sample = rig.source.read().gpus[0]
        assert sample.pcie_rx_bps is None  # wrapped an unknown number of times: unknown
    finally:
        rig.close()


def test_one_missing_counter_value_never_disables_the_counters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = FakeGpu()
    rig = Rig(monkeypatch, driver(570, [gpu]))
    rig.source.read()
    rig.tick()
    gpu.field_errors = {198: UNKNOWN}  # one tick without the RX counter
    gpu.pcie_rx_total += 1_000_000_000
    missing = rig.source.read().gpus[0]
    assert missing.pcie_rx_bps is None
    rig.tick()
    gpu.field_errors = {}
    gpu.pcie_rx_total += 1_000_000_000
    gpu.pcie_tx_total += 400_000_000
    back = rig.source.read().gpus[0]
    # over the two seconds since the last full reading
    assert back.pcie_rx_bps == pytest.approx(1.0e9) and back.pcie_tx_bps == pytest.approx(2.0e8)
    assert back.pcie_counter_based is True
    assert "nvmlDeviceGetPcieThroughput" not in rig.lib.calls


def test_a_counter_reset_is_no_traffic(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu()
    rig = Rig(monkeypatch, driver(570, [gpu]))
    rig.source.read()
    rig.tick()
    gpu.pcie_rx_total = 5  # the driver reloaded: a 64-bit "wrap" worth exabytes
    assert rig.source.read().gpus[0].pcie_rx_bps is None


# -- processes ---------------------------------------------------------------------------
def test_field_batches_are_decoded_in_nvml_h_layout() -> None:
    """The one-pass decoding reads nvmlFieldValue_t / nvmlSample_t at the offsets the
    bindings' own structures put their members, whatever member the driver filled."""
    ref = pynvml.c_nvmlFieldValue_t
    assert bindings.FIELD_ROW.size == ctypes.sizeof(ref) == ctypes.sizeof(bindings.FieldValue)
    offsets = [ref.fieldId.offset, ref.scopeId.offset, ref.valueType.offset]
    assert offsets == [0, 4, 24]
    assert (ref.nvmlReturn.offset, ref.value.offset) == (28, 32)
    assert bindings.SAMPLE_ROW.size == ctypes.sizeof(pynvml.c_nvmlSample_t)

    values = (ref * 6)()  # the bindings' own array decodes too (benchmarks/real_gpu_check)
    filled = [
        (pynvml.NVML_VALUE_TYPE_DOUBLE, "dVal", 41.5),
        (pynvml.NVML_VALUE_TYPE_UNSIGNED_INT, "uiVal", 0xFFFFFFFF),
        (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG, "ulVal", 2**40),
        (pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, "ullVal", 2**63 + 5),
        (pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG, "sllVal", -7),
        (pynvml.NVML_VALUE_TYPE_DOUBLE, "dVal", float("nan")),
    ]
    for i, (kind, member, number) in enumerate(filled):
        values[i].fieldId, values[i].scopeId = 100 + i, i
        values[i].valueType, values[i].nvmlReturn = kind, i % 2 * 3
        setattr(values[i].value, member, number)
    rows = bindings.field_rows(values)
    assert [(fid, scope, ret) for fid, scope, ret, _, _ in rows] == [
        (100 + i, i, i % 2 * 3) for i in range(6)
    ]
    numbers = [bindings.whole_number(bindings.read_value(kind, raw)) for *_, kind, raw in rows]
    assert numbers == [41, None, 2**40, 2**63 + 5, None, None]  # all-ones, <0, NaN: none
    counters = [bindings.field_unsigned(kind, raw) for _, _, _, kind, raw in rows]
    assert counters == [None, 0xFFFFFFFF, 2**40, 2**63 + 5, None, None]
    assert [bindings.value_bits(kind) for _, _, _, kind, _ in rows[1:4]] == [32, 64, 64]

    # a batch read in one unpack (the types it held last time) reads the same
    generic, kinds = bindings.read_rows(values, ())
    typed, again = bindings.read_rows(values, kinds)
    assert again == kinds and [r[:4] for r in typed] == [r[:4] for r in generic]
    assert [bindings.whole_number(r[4]) for r in typed] == numbers
    assert [bindings.counter_value(r[3], r[4]) for r in typed] == counters
    # a member the driver now fills differently: read entry by entry, the new types kept
    values[0].valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    values[0].value.ullVal = 12
    changed, now = bindings.read_rows(values, kinds)
    assert now[0] == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG and changed[0][4] == 12
    values[1].valueType = 99  # a type no release defines: no value, not a crash
    assert bindings.read_rows(values, now)[0][1][4] is None


def test_r535_v3_layout_three_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = driver(535, [FakeGpu(processes=three_processes())])
    assert lib.v3_entry_size == 32
    rig = Rig(monkeypatch, lib)
    procs = {p.pid: p.gpu_memory for p in rig.source.read().processes}
    assert procs == {31337: 1000 * MIB, 31338: 2000 * MIB, 32_000: 3000 * MIB}
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in lib.calls


def test_r550_v3_layout_three_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = driver(550, [FakeGpu(processes=three_processes())])
    rig = Rig(monkeypatch, lib)
    procs = {p.pid: p.gpu_memory for p in rig.source.read().processes}
    assert procs == {31337: 1000 * MIB, 31338: 2000 * MIB, 32_000: 3000 * MIB}


def test_v3_layout_corrected_by_implausible_pids(monkeypatch: pytest.MonkeyPatch) -> None:
    # a driver whose symbols say R550 but that writes R535's 32-byte entries: the second
    # entry read at 24 bytes has PID 0; the other layout reads right and is kept
    lib = FakeNvmlLib([FakeGpu(processes=three_processes())], v3_entry_size=32)
    rig = Rig(monkeypatch, lib)
    for _ in range(3):
        pids = sorted(p.pid for p in rig.source.read().processes)
        assert pids == [31337, 31338, 32_000]
        rig.tick()
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 3  # one call a tick


def test_process_list_is_one_call_a_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    many = [FakeProcess(1000 + i, MIB) for i in range(40)]
    lib = FakeNvmlLib([FakeGpu(processes=many)])
    rig = Rig(monkeypatch, lib)
    assert len(rig.source.read().processes) == 40  # buffer too small: asked twice
    for _ in range(5):
        rig.tick()
        assert len(rig.source.read().processes) == 40
    assert lib.calls["nvmlDeviceGetComputeRunningProcesses_v3"] == 7  # then sized right


def test_reading_processes_leaves_no_buffers_to_the_garbage_collector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tick's process buffers go when the read ends (no ctypes.cast cycles, no array
    type made again each tick): a monitor that runs for days must not feed the collector."""
    lib = driver(550, [FakeGpu(processes=three_processes()) for _ in range(4)])
    rig = Rig(monkeypatch, lib)
    rig.source.read()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(6):
            rig.tick()
            assert len(rig.source.read().processes) == 12
        gc.collect()
        left = Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not [name for name in left if "Array" in name or "LP_" in name], left


def test_mps_clients_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(
        processes=[FakeProcess(500, 300 * MIB)],  # the MPS server
        mps_processes=[FakeProcess(601, 2000 * MIB), FakeProcess(602, 2500 * MIB)],
    )
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    kinds = {p.pid: (p.kind, p.gpu_memory) for p in rig.source.read().processes}
    assert kinds == {
        500: ("compute", 300 * MIB),
        601: ("mps", 2000 * MIB),
        602: ("mps", 2500 * MIB),
    }


def test_graphics_processes_are_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(
        processes=[FakeProcess(10, MIB), FakeProcess(11, MIB)],
        graphics_processes=[FakeProcess(11, MIB), FakeProcess(12, 30 * MIB)],
    )
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    kinds = {p.pid: p.kind for p in rig.source.read().processes}
    assert kinds == {10: "compute", 11: "compute+graphics", 12: "graphics"}


# -- MIG ---------------------------------------------------------------------------------
def mig_gpu(gpm: bool) -> FakeGpu:
    return FakeGpu(
        mig=1,
        gpm=gpm,
        migs=[
            FakeMig(gpu_instance=1, profile="3g.40gb", memory_total=40192 * MIB),
            FakeMig(gpu_instance=2, profile="1g.10gb", memory_used=9000 * MIB, gpm_sm=12.5),
        ],
        processes=[
            FakeProcess(71, 30000 * MIB, gpu_instance=1, compute_instance=0),
            FakeProcess(72, 8000 * MIB, gpu_instance=2, compute_instance=0),
            FakeProcess(73, 900 * MIB, gpu_instance=2, compute_instance=0),
        ],
    )


def test_mig_instances_listed_under_their_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, driver(550, [mig_gpu(gpm=False), FakeGpu()]))
    assert rig.devices[0].mig_mode is True and rig.devices[1].mig_mode is False
    frame = rig.source.read()
    parent = frame.gpus[0]
    assert parent.util_gpu is None  # not supported on a MIG parent
    # what can still be judged keeps being read on the parent
    assert parent.temp_c == 71.0 and parent.power_w is not None and parent.sm_clock_mhz == 1755
    first, second = parent.mig_instances
    assert (first.gpu_instance_id, first.profile, first.pids) == (1, "3g.40gb", (71,))
    assert (first.mem_used, first.mem_total) == (1200 * MIB, 40192 * MIB)
    assert (second.profile, second.mem_used, second.pids) == ("1g.10gb", 9000 * MIB, (72, 73))
    assert second.sm_activity is None  # no GPM: the screen says so in words
    assert frame.gpus[1].mig_instances == ()
    rig.tick()
    assert rig.lib.calls["nvmlDeviceGetUtilizationRates"] == 2  # one per GPU, then stopped
    rig.source.read()
    assert rig.lib.calls["nvmlDeviceGetUtilizationRates"] == 3


def test_mig_utilisation_per_instance_from_gpm(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, driver(570, [mig_gpu(gpm=True)]))
    rig.source.read()
    rig.tick(2.0)
    instances = rig.source.read().gpus[0].mig_instances
    assert [m.sm_activity for m in instances] == [33.0, 12.5]
    rig.close()
    assert rig.lib.gpm_live == set()


# -- events and counters -----------------------------------------------------------------
def test_xid_events_read_without_blocking(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(), FakeGpu()])
    rig = Rig(monkeypatch, lib)
    assert lib.registered == {0: 0x8, 1: 0x8}  # critical Xid errors, both GPUs, one set
    assert rig.source.read().gpus[1].xid_events == ()
    lib.xid_queue = [(1, 79), (1, 48), (0, 13)]
    rig.tick()
    frame = rig.source.read()
    assert [(x.code, x.time) for x in frame.gpus[1].xid_events] == [
        (79, rig.wall()),
        (48, rig.wall()),
    ]
    assert [x.code for x in frame.gpus[0].xid_events] == [13]
    rig.tick()
    assert rig.source.read().gpus[1].xid_events == ()
    rig.close()
    assert lib.event_sets == 0


def test_an_xid_storm_is_read_a_bounded_number_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # a GPU falling off the bus can queue thousands of events: a tick reads a bounded few
    lib = FakeNvmlLib([FakeGpu()])
    rig = Rig(monkeypatch, lib)
    lib.xid_queue = [(0, 79)] * (3 * MAX_EVENTS_PER_READ + 5)
    rig.tick()
    assert len(rig.source.read().gpus[0].xid_events) == MAX_EVENTS_PER_READ
    assert len(lib.xid_queue) == 2 * MAX_EVENTS_PER_READ + 5  # the rest waits for later ticks
    rig.close()


def test_violation_counters_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(violations_ns={0: 12_500_000_000, 1: 0, 3: 2_000_000})
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    sample = rig.source.read().gpus[0]
    assert sample.violation_power_s == pytest.approx(12.5)
    assert sample.violation_thermal_s == 0.0
    assert sample.violation_board_s == pytest.approx(0.002)
    assert sample.violation_reliability_s is None  # not supported: unknown, not 0
    gpu.violations_ns[0] += 3_000_000_000
    rig.tick(VIOLATION_PERIOD_S)
    assert rig.source.read().gpus[0].violation_power_s == pytest.approx(15.5)


def test_utilisation_samples_since_the_previous_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = FakeGpu(util_samples=[(100, 90), (200, 95)])
    rig = Rig(monkeypatch, FakeNvmlLib([gpu]))
    assert rig.source.read().gpus[0].util_samples == ()  # the driver's old buffer
    gpu.util_samples += [(300, 10), (400, 0), (500, 100)]
    rig.tick()
    assert rig.source.read().gpus[0].util_samples == (10.0, 0.0, 100.0)
    rig.tick()
    assert rig.source.read().gpus[0].util_samples == ()  # none new


def test_temperature_limits_and_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, driver(570, [FakeGpu(margin=14, mem_temp=88)]))
    (device,) = rig.devices
    assert (device.temp_gpu_max_c, device.temp_mem_max_c) == (87.0, 95.0)
    sample = rig.source.read().gpus[0]
    assert sample.mem_temp_c == 88.0
    has_margin = hasattr(pynvml, "nvmlDeviceGetMarginTemperature")
    assert sample.temp_margin_c == (14.0 if has_margin else None)


def test_margin_unknown_before_r570(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, driver(550, [FakeGpu()]))
    assert rig.source.read().gpus[0].temp_margin_c is None
    assert "nvmlDeviceGetMarginTemperature" not in rig.lib.calls


def test_card_max_link_generation_beside_the_systems(monkeypatch: pytest.MonkeyPatch) -> None:
    # a Gen5 card in a Gen4 host: limited by the host, not degraded
    rig = Rig(monkeypatch, FakeNvmlLib([FakeGpu(pcie_max_gen=4, gpu_max_gen=5, pcie_gen=4)]))
    (device,) = rig.devices
    assert (device.pcie_max_gen, device.pcie_gpu_max_gen) == (4, 5)


# -- smaller traps -----------------------------------------------------------------------
def test_fan_speed_above_100_percent_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    rig = Rig(monkeypatch, FakeNvmlLib([FakeGpu(fan=108), FakeGpu(fan=0xFFFFFFFF)]))
    frame = rig.source.read()
    assert frame.gpus[0].fan_pct == 108.0 and frame.gpus[1].fan_pct is None


def test_gpm_samples_freed_on_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(gpm=True), FakeGpu(gpm=True), FakeGpu(gpm=True)]
    lib = FakeNvmlLib(gpus)
    rig = Rig(monkeypatch, lib)
    assert len(lib.gpm_live) == 6  # two per GPU, allocated once
    for _ in range(5):
        rig.source.read()
        rig.tick(2.0)
    assert len(lib.gpm_live) == 6  # nothing allocated per tick
    gpus[0].errors = {"nvmlGpmSampleGet": NOT_SUPPORTED}  # stops: its samples go at once
    gpus[1].errors = {"nvmlGpmSampleGet": UNKNOWN}  # n/a for now: kept for the retry
    rig.source.read()
    assert len(lib.gpm_live) == 4
    gpus[2].lost = True
    rig.tick(2.0)
    rig.source.read()
    rig.close()
    assert lib.gpm_live == set()


def test_newer_clock_event_reason_bits_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    mask = ce.SW_POWER_CAP | 0x200 | 0x400
    rig = Rig(monkeypatch, FakeNvmlLib([FakeGpu(reasons=mask)]))
    assert rig.source.read().gpus[0].reason_names == (
        "sw_power_cap",
        "board_limit",
        "reliability",
    )


def test_missing_functions_on_old_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = {
        "nvmlDeviceGetSamples",
        "nvmlDeviceGetViolationStatus",
        "nvmlEventSetCreate",
        "nvmlDeviceGetMPSComputeRunningProcesses_v3",
        "nvmlDeviceGetMPSComputeRunningProcesses_v2",
        "nvmlDeviceGetMPSComputeRunningProcesses",
        "nvmlDeviceGetGpuMaxPcieLinkGeneration",
        "nvmlDeviceGetFieldValues",
        "nvmlGpmQueryDeviceSupport",
    }
    rig = Rig(monkeypatch, driver(535, [FakeGpu(gpm=True)], missing=missing))
    try:
        assert rig.devices[0].pcie_gpu_max_gen is None and rig.devices[0].gpm_supported is False
        for _ in range(3):
            frame = rig.source.read()
            rig.tick()
        sample = frame.gpus[0]
        assert sample.temp_c == 71.0 and sample.util_samples == () and sample.xid_events == ()
        assert sample.violation_power_s is None and sample.mem_temp_c is None
        assert sample.pcie_replay_count == 3 and sample.energy_j is not None  # own calls
        assert [p.pid for p in frame.processes] == [4242]
    finally:
        rig.close()


def test_gpu_lost_during_event_or_field_read(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(), FakeGpu()]
    rig = Rig(monkeypatch, FakeNvmlLib(gpus))
    gpus[0].errors = {"nvmlDeviceGetFieldValues": GPU_NOT_FOUND}
    assert [s.lost for s in rig.source.read().gpus] == [True, False]


# -- the budget --------------------------------------------------------------------------
@pytest.mark.parametrize("branch", [535, 550, 570])
def test_at_most_12_calls_per_gpu_per_second(monkeypatch: pytest.MonkeyPatch, branch: int) -> None:
    gpus = [
        FakeGpu(
            gpm=True,
            fan=40,
            processes=three_processes(),
            violations_ns={0: 1, 1: 1, 3: 1, 5: 1},
            util_samples=[(i, 50) for i in range(1, 20)],
        )
        for _ in range(8)
    ]
    lib = driver(branch, gpus)
    for gpu in gpus:
        gpu.throughput_delay_s = 0.0  # calls are counted here, not waited for
    rig = Rig(monkeypatch, lib)
    try:
        seconds = 120
        made = rig.steady_calls(seconds)
        per_gpu_s = sum(made.values()) / len(gpus) / seconds
        assert per_gpu_s <= 12.0, made
    finally:
        rig.close()


# -- what users read -----------------------------------------------------------------------
@pytest.mark.parametrize("branch", [535, 570])
def test_snapshot_json_on_each_branch(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], branch: int
) -> None:
    import json

    from gputui.cli import main

    gpus = [mig_gpu(gpm=branch >= 570), FakeGpu(processes=three_processes())]
    lib = driver(branch, gpus)
    lib.xid_queue = [(1, 79)]
    install(monkeypatch, lib)
    assert main(["snapshot", "--samples", "2", "--interval", "0.25"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [d["mig_mode"] for d in document["devices"]] == [True, False]
    parent, plain = document["latest"]["gpus"]
    assert [m["profile"] for m in parent["mig_instances"]] == ["3g.40gb", "1g.10gb"]
    assert parent["util_gpu"] is None and parent["temp_c"] == 71.0
    assert plain["pcie_counter_based"] in (True, False, None)
    pids = {p["pid"] for p in document["latest"]["processes"]}
    assert {31337, 31338, 32_000, 71, 72, 73} <= pids


def test_gpu_panel_shows_driver_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    from gputui.core.config import Thresholds
    from gputui.sampling.history import History
    from gputui.view.cells import plain_lines
    from gputui.view.detail import View, detail
    from gputui.view.timeline import Timeline

    gpus = [
        mig_gpu(gpm=False),
        FakeGpu(mem_temp=92, margin=3, violations_ns={0: 12_500_000_000}),
    ]
    lib = driver(570, gpus)
    rig = Rig(monkeypatch, lib)
    lib.xid_queue = [(1, 48)]
    history = History(60)
    frame = rig.source.read()
    history.add(frame)

    def panel(index: int) -> str:
        view = View(60, 1.0, 150, 40)
        panel = detail(frame, rig.devices[index], history, Timeline(), view, Thresholds())
        return "\n".join(plain_lines(panel, 150))

    mig = panel(0)
    assert "utilisation not visible in MIG mode" in mig
    assert "MIG     3g.40gb gi 1" in mig and "pid 72, 73" in mig
    plain = panel(1)
    assert "Xid     48 double-bit ECC error" in plain
    assert "mem 92 / 95 °C" in plain
    if hasattr(pynvml, "nvmlDeviceGetMarginTemperature"):
        assert "margin 3 °C" in plain
    assert "Held" not in plain  # one reading of a cumulative counter says nothing yet
    gpus[1].violations_ns = {0: 17_500_000_000}  # 5 s more held by the power limit
    for _ in range(11):  # the counters are read every 10 s
        rig.tick()
        frame = rig.source.read()
        history.add(frame)
    assert "Held    power 5 s" in panel(1)
    rig.tick()
    gpus[1].pcie_rx_total += 10**9
    frame = rig.source.read()
    assert " counted" in panel(1)  # byte counters, not a sampled window


def test_a_refused_process_list_is_not_judged_not_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver answers NO_PERMISSION for the compute process list (a container without
    the rights): no process known there is not "no processes", and the verdict that read
    processes is not complete (doctor exits 4, not 0)."""
    refused = {
        name: NO_PERMISSION
        for name in (
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetComputeRunningProcesses_v2",
            "nvmlDeviceGetComputeRunningProcesses",
        )
    }
    rig = Rig(monkeypatch, FakeNvmlLib([FakeGpu(errors=refused), FakeGpu()]))
    monitor = make_monitor(rig.devices, Config(), SourceInfo("NVML", SourceKind.LIVE))
    try:
        for _ in range(31):
            frame = rig.source.read()
            monitor.ingest(frame)
            rig.tick()
    finally:
        rig.close()
    assert frame.processes_unread == (0,)
    assert any("GPU 0: the driver did not give the process list" in n.text for n in frame.notes)
    judgement = monitor.advisor.judgement
    assert not judgement.complete
    unread = {(n.rule, n.gpu) for n in judgement.not_judged}
    assert (RuleId.INPUT_STARVED, 0) in unread and (RuleId.INPUT_STARVED, 1) not in unread
