"""The readings of the host row and the all-processes view: the host's uptime, each
process's start time and its SM utilisation (nvmlDeviceGetProcessUtilization, through the
real nvidia-ml-py code over the fake libnvidia-ml of tests/nvml_double.py), the simulated
node's values for them, and their way through the snapshot and recording formats."""

from __future__ import annotations

import ctypes
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pynvml  # noqa: TID251 (the double's contract with the bindings' own wrapper)
import pytest

from gputui.core.config import PROCESS_UTIL_PERIOD_S
from gputui.core.manual_clock import ManualClock
from gputui.core.model import Frame, GpuSample, HostSample, ProcessSample, SourceInfo
from gputui.core.names import SourceKind
from gputui.exporters.recorder import RecordWriter
from gputui.formats.recording import Header, read_recording
from gputui.formats.values import frame_dict, parse_frame
from gputui.sources.host import GpuProcess, HostReader
from gputui.sources.nvml import NvmlSource, policy
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from tests.nvml_double import (
    GPU_IS_LOST,
    INSUFFICIENT_SIZE,
    MIB,
    NO_PERMISSION,
    NOT_FOUND,
    NOT_SUPPORTED,
    OK,
    FakeGpu,
    FakeNvmlLib,
    FakeProcess,
    driver,
    install,
)
from tests.unit.test_nvml_drivers import Rig, three_processes

FN = "nvmlDeviceGetProcessUtilization"


# -- the model -------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -0.5])
def test_new_numbers_refuse_non_finite_and_negative(bad: float) -> None:
    process = ProcessSample(pid=1, gpu_index=0, started=bad, sm_util=bad)
    assert (process.started, process.sm_util) == (None, None)
    assert HostSample(uptime_s=bad).uptime_s is None


def test_new_numbers_keep_good_values_as_floats() -> None:
    process = ProcessSample(pid=1, gpu_index=0, started=1_700_000_000, sm_util=0)
    assert process.started == 1_700_000_000.0 and isinstance(process.started, float)
    assert process.sm_util == 0.0 and isinstance(process.sm_util, float)
    assert HostSample(uptime_s=12).uptime_s == 12.0
    assert ProcessSample(pid=1, gpu_index=0, sm_util=101.0).sm_util is None  # a share
    assert ProcessSample(pid=1, gpu_index=0, sm_util=100.0).sm_util == 100.0
    assert (ProcessSample(pid=1, gpu_index=0).started, HostSample().uptime_s) == (None, None)


# -- the host -------------------------------------------------------------------------
def _proc_with_boot(root: Path, btime: int) -> Path:
    """A /proc of two CPUs booted at ``btime``, with the files a host reading reads."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(
        "cpu  20 0 10 200 4 0 0 0 0 0\ncpu0 10 0 5 100 2 0 0 0 0 0\n"
        f"cpu1 10 0 5 100 2 0 0 0 0 0\nintr 1 2 3\nctxt 42\nbtime {btime}\n"
    )
    (root / "loadavg").write_text("0.50 0.40 0.30 2/300 4242\n")
    (root / "meminfo").write_text(
        "MemTotal: 16384 kB\nMemFree: 1024 kB\nMemAvailable: 8192 kB\n"
        "SwapTotal: 0 kB\nSwapFree: 0 kB\n"
    )
    return root


def test_uptime_from_a_boot_time_read_once(tmp_path: Path) -> None:
    proc = _proc_with_boot(tmp_path / "proc", 1_700_000_000)
    wall = ManualClock(1_700_000_000.0 + 3 * 86400)
    reader = HostReader(wall=wall, proc=str(proc))
    assert reader.read_host().uptime_s == 3 * 86400.0
    wall.advance(5.0)
    _proc_with_boot(proc, 1_600_000_000)  # read once, at construction: a tick only subtracts
    assert reader.read_host().uptime_s == 3 * 86400.0 + 5.0


def test_uptime_unknown_when_neither_proc_nor_psutil_can_say(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def boot_time() -> float:
        raise OSError("no /proc/stat")

    monkeypatch.setattr(psutil, "boot_time", boot_time)
    assert HostReader(proc=str(tmp_path)).read_host().uptime_s is None
    # a clock set back before the boot time: no negative uptime
    proc = _proc_with_boot(tmp_path / "proc", 1_700_000_000)
    reader = HostReader(wall=ManualClock(1_600_000_000.0), proc=str(proc))
    assert reader.read_host().uptime_s is None


def test_real_uptime_is_plausible() -> None:
    uptime = HostReader().read_host().uptime_s
    assert uptime is not None and 0 < uptime < 100 * 365 * 86400


def test_process_start_time_and_sm_util_are_joined() -> None:
    reader = HostReader(device_check=lambda pid: True)
    pid = os.getpid()
    samples, _ = reader.join_processes([GpuProcess(pid, 0, 1 * MIB, "compute", sm_util=42.0)])
    (sample,) = samples
    assert sample.visible and sample.started == psutil.Process(pid).create_time()
    assert sample.sm_util == 42.0
    # the second tick: the same start
    samples, _ = reader.join_processes([GpuProcess(pid, 0, 1 * MIB, "compute")])
    assert samples[0].started == psutil.Process(pid).create_time()
    assert samples[0].sm_util is None


def test_invisible_process_keeps_sm_util_without_start() -> None:
    reader = HostReader(device_check=lambda pid: True)
    gone = 4_194_000  # no such PID here: another PID namespace
    samples, _ = reader.join_processes([GpuProcess(gone, 0, 1 * MIB, "compute", sm_util=7.0)])
    assert not samples[0].visible and samples[0].started is None and samples[0].sm_util == 7.0


# -- NVML: the fake driver's per-process utilisation -----------------------------------
class DriverProcessUtilSample(ctypes.Structure):
    """nvmlProcessUtilizationSample_t as the driver lays it out."""

    _fields_ = [
        ("pid", ctypes.c_uint),
        ("timeStamp", ctypes.c_ulonglong),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
    ]


@dataclass
class UtilGpu(FakeGpu):
    """A fake GPU whose driver keeps per-process samples: (pid, timestamp µs, SM %)."""

    process_util: list[tuple[int, int, int]] = field(default_factory=list)


class UtilLib(FakeNvmlLib):
    """The fake libnvidia-ml with nvmlDeviceGetProcessUtilization, a driver that has it.

    As nvml.h says: samples newer than lastSeenTimeStamp; NOT_FOUND when there are none;
    INSUFFICIENT_SIZE (and the count needed) for a NULL or too small buffer."""

    def __init__(self, gpus: list[FakeGpu], **options: Any) -> None:
        super().__init__(gpus, **options)
        self.last_seen: list[int] = []  # lastSeenTimeStamp of every call

    def fn_nvmlDeviceGetProcessUtilization(
        self, name: str, h: Any, buf: Any, count_ref: Any, last: Any
    ) -> int:
        gpu, ret = self._gpu(name, h)
        if gpu is None:
            return ret
        since = int(getattr(last, "value", last))
        self.last_seen.append(since)
        fresh = [s for s in getattr(gpu, "process_util", ()) if s[1] > since]
        if not fresh:
            return NOT_FOUND
        count = count_ref._obj
        if buf is None or count.value < len(fresh):
            count.value = len(fresh)
            return INSUFFICIENT_SIZE
        entries = ctypes.cast(buf, ctypes.POINTER(DriverProcessUtilSample))
        for i, (pid, stamp, sm) in enumerate(fresh):
            entries[i].pid, entries[i].timeStamp, entries[i].smUtil = pid, stamp, sm
            entries[i].memUtil = entries[i].encUtil = entries[i].decUtil = 0
        count.value = len(fresh)
        return OK


def two_pids() -> list[FakeProcess]:
    return [FakeProcess(31337, 1000 * MIB), FakeProcess(31338, 2000 * MIB)]


def sm_of(frame: Frame) -> dict[tuple[int, int], float | None]:
    return {(p.gpu_index, p.pid): p.sm_util for p in frame.processes}


def test_double_answers_the_bindings_own_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    """The double keeps the C contract nvidia-ml-py's wrapper relies on (size, then fill)."""
    gpu = UtilGpu(process_util=[(31337, 10, 55), (31338, 11, 30)])
    rig = Rig(monkeypatch, UtilLib([gpu]))
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        got = pynvml.nvmlDeviceGetProcessUtilization(handle, 0)
        assert [(s.pid, s.timeStamp, s.smUtil) for s in got] == [(31337, 10, 55), (31338, 11, 30)]
        with pytest.raises(pynvml.NVMLError) as caught:
            pynvml.nvmlDeviceGetProcessUtilization(handle, 11)
        assert caught.value.value == NOT_FOUND
    finally:
        rig.close()


def test_sm_util_of_two_pids_newest_sample_each(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = UtilGpu(
        processes=two_pids(),
        process_util=[
            (31337, 1_000, 20),
            (31338, 1_000, 10),
            (31337, 2_000, 61),  # newer: this one counts
            (31338, 1_500, 33),
            (99999, 2_500, 90),  # a PID that is not on the GPU's list: ignored
        ],
    )
    lib = UtilLib([gpu, UtilGpu(processes=[])])
    rig = Rig(monkeypatch, lib)
    try:
        frame = rig.source.read()
        assert sm_of(frame) == {(0, 31337): 61.0, (0, 31338): 33.0}
        assert lib.last_seen == [0]  # the first call: everything the driver keeps
        assert lib.calls[FN] == 1  # and the GPU without processes was not asked
        # in between, the last answer is reused: no call
        for _ in range(int(PROCESS_UTIL_PERIOD_S) - 1):
            rig.tick()
            assert sm_of(rig.source.read()) == {(0, 31337): 61.0, (0, 31338): 33.0}
        assert lib.calls[FN] == 1
        # next period: asked for what is newer than the newest sample seen
        gpu.process_util += [(31337, 3_000, 12), (31338, 3_000, 0)]
        rig.tick()
        assert sm_of(rig.source.read()) == {(0, 31337): 12.0, (0, 31338): 0.0}
        assert lib.last_seen == [0, 2_500] and lib.calls[FN] == 2
    finally:
        rig.close()


def test_sm_util_reaches_the_joined_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the host reader: our own PID on the fake GPU gets SM % and start time."""
    pid = os.getpid()
    gpu = UtilGpu(processes=[FakeProcess(pid, 100 * MIB)], process_util=[(pid, 5, 44)])
    install(monkeypatch, UtilLib([gpu]))
    source = NvmlSource(
        host=HostReader(device_check=lambda p: True),
        clock=ManualClock(1_700_000_000.0),
        monotonic=ManualClock(1000.0),
    )
    source.open()
    try:
        (process,) = source.read().processes
        assert process.visible and process.sm_util == 44.0
        assert process.started == psutil.Process(pid).create_time()
    finally:
        source.close()


def other_readings_intact(frame: Frame) -> None:
    sample = frame.gpus[0]
    assert not sample.lost and sample.util_gpu == 97.0 and sample.power_w is not None
    assert sample.temp_c == 71.0 and sample.mem_used == 40000 * MIB
    assert {p.pid for p in frame.processes} == {31337, 31338}
    assert all(p.gpu_memory is not None for p in frame.processes)


def test_not_supported_leaves_none_and_is_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = UtilGpu(processes=two_pids(), errors={FN: NOT_SUPPORTED}, process_util=[(31337, 1, 5)])
    lib = UtilLib([gpu])
    rig = Rig(monkeypatch, lib)
    try:
        for _ in range(int(3 * PROCESS_UTIL_PERIOD_S)):
            frame = rig.source.read()
            assert sm_of(frame) == {(0, 31337): None, (0, 31338): None}
            other_readings_intact(frame)
            rig.tick()
        assert lib.calls[FN] == 1
    finally:
        rig.close()


def test_no_permission_leaves_none_and_is_asked_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpu = UtilGpu(processes=two_pids(), errors={FN: NO_PERMISSION}, process_util=[(31337, 1, 5)])
    lib = UtilLib([gpu])
    rig = Rig(monkeypatch, lib)
    try:
        for _ in range(int(policy.RETRY_AFTER_S)):
            frame = rig.source.read()
            assert sm_of(frame)[(0, 31337)] is None
            other_readings_intact(frame)
            rig.tick()
        assert lib.calls[FN] == 1
        gpu.errors = {}  # permission given
        rig.tick(PROCESS_UTIL_PERIOD_S)
        assert sm_of(rig.source.read())[(0, 31337)] == 5.0
    finally:
        rig.close()


@pytest.mark.parametrize("branch", [535, 570])
def test_old_driver_without_the_function(monkeypatch: pytest.MonkeyPatch, branch: int) -> None:
    gpus: list[FakeGpu] = [UtilGpu(processes=two_pids(), process_util=[(31337, 1, 5)])]
    lib = driver(branch, gpus, missing={FN})
    rig = Rig(monkeypatch, lib)
    try:
        for _ in range(int(2 * PROCESS_UTIL_PERIOD_S)):
            frame = rig.source.read()
            assert sm_of(frame) == {(0, 31337): None, (0, 31338): None}
            other_readings_intact(frame)
            rig.tick()
        assert FN not in lib.calls
    finally:
        rig.close()


def test_the_plain_double_is_a_driver_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = FakeNvmlLib([FakeGpu(processes=two_pids())])
    rig = Rig(monkeypatch, lib)
    try:
        frame = rig.source.read()
        assert sm_of(frame) == {(0, 31337): None, (0, 31338): None}
        other_readings_intact(frame)
    finally:
        rig.close()


def test_not_found_is_no_sample_yet_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = UtilGpu(processes=two_pids())  # the driver has no sample: NOT_FOUND
    lib = UtilLib([gpu])
    rig = Rig(monkeypatch, lib)
    try:
        frame = rig.source.read()
        assert sm_of(frame) == {(0, 31337): None, (0, 31338): None}
        other_readings_intact(frame)
        assert lib.last_seen == [0]
        # the next period asks again (not stopped, not pushed back) and gets the samples
        gpu.process_util = [(31338, 700, 48)]
        rig.tick(PROCESS_UTIL_PERIOD_S)
        assert sm_of(rig.source.read()) == {(0, 31337): None, (0, 31338): 48.0}
        # and nothing newer than 700 since: NOT_FOUND again, None again
        rig.tick(PROCESS_UTIL_PERIOD_S)
        assert sm_of(rig.source.read()) == {(0, 31337): None, (0, 31338): None}
        assert lib.last_seen == [0, 0, 700]
    finally:
        rig.close()


def test_more_samples_than_the_buffer_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    many = [(31337 if i % 2 else 31338, 10 + i, i % 100) for i in range(300)]
    gpu = UtilGpu(processes=two_pids(), process_util=many)
    lib = UtilLib([gpu])
    rig = Rig(monkeypatch, lib)
    try:
        assert sm_of(rig.source.read()) == {(0, 31337): 99.0, (0, 31338): 98.0}
        assert lib.calls[FN] == 2  # too small once, then the room the driver asked for
        gpu.process_util += [(31337, 1_000, 3), (31338, 1_000, 4)]
        rig.tick(PROCESS_UTIL_PERIOD_S)
        assert sm_of(rig.source.read()) == {(0, 31337): 3.0, (0, 31338): 4.0}
        assert lib.calls[FN] == 3
    finally:
        rig.close()


def test_impossible_percentages_are_none(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = UtilGpu(processes=two_pids(), process_util=[(31337, 1, 0xFFFFFFFF), (31338, 1, 250)])
    rig = Rig(monkeypatch, UtilLib([gpu]))
    try:
        assert sm_of(rig.source.read()) == {(0, 31337): None, (0, 31338): None}
    finally:
        rig.close()


def test_lost_gpu_during_the_call_is_lost_the_other_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus: list[FakeGpu] = [
        UtilGpu(processes=two_pids(), errors={FN: GPU_IS_LOST}),
        UtilGpu(processes=[FakeProcess(555, MIB)], process_util=[(555, 3, 9)]),
    ]
    rig = Rig(monkeypatch, UtilLib(gpus))
    try:
        frame = rig.source.read()
        assert [s.lost for s in frame.gpus] == [True, False]
        assert sm_of(frame) == {(1, 555): 9.0}
    finally:
        rig.close()


@pytest.mark.parametrize("branch", [535, 550, 570])
def test_budget_holds_with_the_function(monkeypatch: pytest.MonkeyPatch, branch: int) -> None:
    """The per-tick budget of test_nvml_drivers, on a driver that has the function."""
    gpus: list[FakeGpu] = [
        UtilGpu(
            gpm=True,
            fan=40,
            processes=three_processes(),
            violations_ns={0: 1, 1: 1, 3: 1, 5: 1},
            util_samples=[(i, 50) for i in range(1, 20)],
            process_util=[(31337, 5, 40), (31338, 5, 30)],
        )
        for _ in range(8)
    ]
    base = driver(branch, gpus)
    lib = UtilLib(gpus, missing=base.missing, driver=base.driver, v3_entry_size=base.v3_entry_size)
    for gpu in gpus:
        gpu.throughput_delay_s = 0.0  # calls are counted here, not waited for
    rig = Rig(monkeypatch, lib)
    try:
        seconds = 120
        made = rig.steady_calls(seconds)
        assert made[FN] == len(gpus) * seconds / PROCESS_UTIL_PERIOD_S
        assert sum(made.values()) / len(gpus) / seconds <= 12.0, made
    finally:
        rig.close()


# -- the simulated node ---------------------------------------------------------------
def demo_frames(ticks: int, scenario: str | None = None) -> list[Frame]:
    clock = ManualClock(1_800_000_000.5)
    source = SimulatedSource(resolve_scenarios(scenario, 8), clock=clock)
    source.open()
    frames = []
    for _ in range(ticks):
        frames.append(source.read())
        clock.advance(1.0)
    return frames


def test_simulated_processes_have_a_start_and_sm_util() -> None:
    frames = demo_frames(5)
    first, last = frames[0], frames[-1]
    assert first.processes  # the mix has seven busy GPUs
    for process in first.processes:
        assert process.started is not None
        assert 10 * 60 <= first.time - process.started <= 24 * 3600
        gpu = first.gpu(process.gpu_index)
        assert gpu is not None and process.sm_util == gpu.util_gpu
    # a start time does not move; SM % follows the GPU's utilisation tick by tick
    assert [p.started for p in last.processes] == [p.started for p in first.processes]
    for process in last.processes:
        gpu = last.gpu(process.gpu_index)
        assert gpu is not None and process.sm_util == gpu.util_gpu
    # the ranks of the node's one training job started together, its own jobs apart
    ranks: list[float] = []
    others: list[float] = []
    for process in first.processes:
        assert process.started is not None
        rank = any(e.startswith("RANK=") for e in process.env)
        (ranks if rank else others).append(process.started)
    assert len(ranks) >= 2 and max(ranks) - min(ranks) < 5
    assert others and all(abs(o - r) > 60 for o in others for r in ranks)


def test_simulated_host_has_been_up_a_few_days() -> None:
    uptimes = []
    for frame in demo_frames(3):
        assert frame.host is not None and frame.host.uptime_s is not None
        uptimes.append(frame.host.uptime_s)
    assert all(2 * 86400 < u < 7 * 86400 for u in uptimes)
    assert uptimes[1] == uptimes[0] + 1.0 and uptimes[2] == uptimes[0] + 2.0


def test_simulated_readings_are_deterministic() -> None:
    assert demo_frames(4) == demo_frames(4)
    sweep = demo_frames(2, "sweep")[1]
    assert len({p.started for p in sweep.processes}) == len(sweep.processes)


# -- formats --------------------------------------------------------------------------
def a_frame() -> Frame:
    return Frame(
        time=1_800_000_000.0,
        gpus=(GpuSample(index=0, util_gpu=80.0),),
        host=HostSample(cpu_percent=3.0, hostname="n1", uptime_s=271_234.5),
        processes=(
            ProcessSample(pid=7, gpu_index=0, started=1_799_990_000.25, sm_util=61.0),
            ProcessSample(pid=8, gpu_index=0),
        ),
    )


def test_frame_round_trips_the_new_fields() -> None:
    frame = a_frame()
    data = json.loads(json.dumps(frame_dict(frame)))
    assert data["host"]["uptime_s"] == 271_234.5
    assert data["processes"][0]["started"] == 1_799_990_000.25
    assert data["processes"][0]["sm_util"] == 61.0
    assert data["processes"][1]["sm_util"] is None
    assert parse_frame(data) == frame


def test_older_files_without_them_read_as_none() -> None:
    data = json.loads(json.dumps(frame_dict(a_frame())))
    del data["host"]["uptime_s"]
    for process in data["processes"]:
        del process["started"], process["sm_util"]
    frame = parse_frame(data)
    assert frame.host is not None and frame.host.uptime_s is None
    assert all(p.started is None and p.sm_util is None for p in frame.processes)


def test_impossible_values_in_a_file_read_as_none() -> None:
    data = json.loads(json.dumps(frame_dict(a_frame())))
    data["host"]["uptime_s"] = -5
    data["processes"][0]["started"] = -1.0
    data["processes"][0]["sm_util"] = 400
    frame = parse_frame(data)
    assert frame.host is not None and frame.host.uptime_s is None
    assert (frame.processes[0].started, frame.processes[0].sm_util) == (None, None)


@pytest.mark.parametrize("version", [2, 3])
def test_recording_round_trips_the_new_fields(tmp_path: Path, version: int) -> None:
    frames = demo_frames(3)
    path = tmp_path / "r.jsonl"
    header = Header(SourceInfo("SIMULATED", SourceKind.SIMULATED, "mix"), (), 1.0)
    writer = RecordWriter(path, header, version=version)
    for frame in frames:
        writer.write(frame, ())
    writer.close()
    read = [tick.frame for tick in read_recording(path).ticks]
    assert read == frames
    assert all(p.started is not None and p.sm_util is not None for p in read[0].processes)
    host = read[0].host
    assert host is not None and host.uptime_s is not None
