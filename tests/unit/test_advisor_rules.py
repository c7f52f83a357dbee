"""Each rule on small synthetic histories: fires, stays quiet, and never guesses."""

from __future__ import annotations

from dataclasses import replace

from gputui.core import clock_events as ce
from gputui.core.model import GpuSample, ProcessSample
from tests.advisor_kit import BUSY, GIB, H100, HOST, IDLE, TRAINER, Sim, torchrun_env


def finding(sim: Sim, rule: str):  # type: ignore[no-untyped-def]
    matches = [f for f in sim.findings if f.rule == rule]
    assert matches, f"{rule} not in {sim.rules()}"
    return matches[0]


# -- healthy and idle: nothing ---------------------------------------------------------
def test_healthy_busy_gpu_raises_nothing() -> None:
    sim = Sim()
    assert sim.run(120, BUSY) == ()


def test_idle_gpu_raises_nothing_even_with_link_at_gen1() -> None:
    sim = Sim()
    assert sim.run(120, IDLE, processes=()) == ()


# -- thermal ---------------------------------------------------------------------------
THROTTLED = replace(
    BUSY, temp_c=90.0, sm_clock_mhz=1380, clock_reasons=ce.SW_THERMAL | ce.HW_THERMAL
)


def test_thermal_throttle_fires_with_numbers() -> None:
    sim = Sim()
    sim.run(30, THROTTLED)
    f = finding(sim, "thermal-throttle")
    assert f.severity == "critical" and f.gpu == 0
    text = " | ".join(f.evidence)
    assert "90 °C, slowdown at 89 °C, shutdown at 92 °C" in text
    assert "1380 / 1980 MHz" in text and "-30 %" in text
    assert "thermal-hot" not in sim.rules()  # superseded: one finding per cause


def test_thermal_throttle_by_temperature_alone_when_reasons_unknown() -> None:
    sim = Sim()
    sim.run(30, replace(THROTTLED, clock_reasons=None))
    assert "thermal-throttle" in sim.rules()


def test_thermal_throttle_not_when_idle() -> None:
    sim = Sim()
    sim.run(60, replace(THROTTLED, util_gpu=0.0), processes=())
    assert sim.findings == ()


def test_thermal_hot_before_it_throttles_with_trend() -> None:
    sim = Sim()
    sim.run(40, lambda i: replace(BUSY, temp_c=82.0 + 0.1 * i))
    f = finding(sim, "thermal-hot")
    assert f.severity == "warning"
    assert any("°C/min" in e for e in f.evidence)
    assert any("from the board's max operating temperature (87 °C)" in e for e in f.evidence)


def test_hw_slowdown() -> None:
    sim = Sim()
    sim.run(30, replace(BUSY, clock_reasons=ce.HW_POWER_BRAKE | ce.HW_SLOWDOWN, sm_clock_mhz=900))
    f = finding(sim, "hw-slowdown")
    assert f.severity == "critical" and any("power brake (HW)" in e for e in f.evidence)
    assert any("of the busy time" in e for e in f.evidence)


# -- power -----------------------------------------------------------------------------
def test_power_cap() -> None:
    sim = Sim()
    sim.run(30, replace(BUSY, power_w=698.0, sm_clock_mhz=1640, clock_reasons=ce.SW_POWER_CAP))
    f = finding(sim, "power-cap")
    assert "698 W of the 700 W enforced limit" in f.evidence[0]


def test_power_cap_reason_without_power_at_limit_is_quiet() -> None:
    # the reason bit flickers on during transients; power well below the limit is no cap
    sim = Sim()
    sim.run(30, replace(BUSY, power_w=400.0, clock_reasons=ce.SW_POWER_CAP))
    assert "power-cap" not in sim.rules()


def test_power_limit_lowered_at_any_load() -> None:
    sim = Sim()
    sim.run(10, replace(IDLE, power_limit_w=450.0), processes=())
    f = finding(sim, "power-limit-lowered")
    assert "enforced limit 450 W, default 700 W (-36 %)" in f.evidence[0]
    assert "nvidia-smi -i 0 -pl 700" in f.remedies[0]


def test_clocks_limited_by_application_clocks() -> None:
    sim = Sim()
    sim.run(
        20,
        replace(
            BUSY, app_sm_clock_mhz=1200, sm_clock_mhz=1200, clock_reasons=ce.APPLICATIONS_CLOCKS
        ),
    )
    f = finding(sim, "clocks-limited")
    assert "application SM clock 1200 MHz, default 1755 MHz" in f.evidence
    assert any("-rac" in r for r in f.remedies)


# -- memory ----------------------------------------------------------------------------
def test_vram_pressure_critical_with_time_to_full_only_while_growing() -> None:
    sim = Sim()
    sim.run(20, replace(BUSY, mem_used=int(74 * GIB)))
    assert "vram-pressure" not in sim.rules()  # high and flat: a reserve, not pressure
    assert finding(sim, "vram-reserved").severity == "info"
    sim.run(90, lambda i: replace(BUSY, mem_used=int(74 * GIB + i * 2**26)))
    f = finding(sim, "vram-pressure")
    assert f.severity == "critical"
    assert any("full in about" in e for e in f.evidence)
    assert any("pid 4242 python (alice) holds 49.0 GiB" in e for e in f.evidence)


def test_vram_quiet_below_90_percent() -> None:
    sim = Sim()
    sim.run(30, replace(BUSY, mem_used=int(71 * GIB)))
    assert "vram-pressure" not in sim.rules()


def test_host_memory_pressure_from_growing_swap() -> None:
    sim = Sim()
    short = replace(HOST, mem_available=int(0.08 * 512 * GIB), swap_total=64 * GIB)
    sim.run(40, BUSY, host=lambda i: replace(short, swap_used=i * 50_000_000))
    f = finding(sim, "host-memory-pressure")
    assert f.gpu is None and f.severity == "warning"
    assert f.title.startswith("Host memory running out")
    assert any("swap used" in e for e in f.evidence)
    # cold pages swapped out while most memory is available (the page cache grows): calm
    roomy = replace(HOST, mem_available=int(0.78 * 512 * GIB), swap_total=64 * GIB)
    calm = Sim()
    calm.run(40, BUSY, host=lambda i: replace(roomy, swap_used=i * 2_000_000))
    assert "host-memory-pressure" not in calm.rules()


def test_host_memory_critical_when_nearly_out() -> None:
    sim = Sim()
    sim.run(10, BUSY, host=replace(HOST, mem_available=10 * GIB))
    assert finding(sim, "host-memory-pressure").severity == "critical"


def test_idle_allocated_after_five_minutes() -> None:
    sim = Sim()
    idle_with_memory = replace(IDLE, mem_used=20 * GIB)
    holder = replace(TRAINER, gpu_memory=19 * GIB, cpu_percent=0.0)
    sim.run(200, idle_with_memory, processes=(holder,))
    assert "idle-allocated" not in sim.rules()
    sim.run(120, idle_with_memory, processes=(holder,))
    f = finding(sim, "idle-allocated")
    assert any("pid 4242" in e and "19.0 GiB" in e for e in f.evidence)
    # a MIG slice gives no utilisation: its SM activity says the GPU does nothing
    mig = Sim(devices=(replace(H100, mig_mode=True),))
    slice_idle = replace(idle_with_memory, util_gpu=None, sm_activity=0.0)
    mig.run(320, slice_idle, processes=(holder,))
    f = finding(mig, "idle-allocated")
    assert f.evidence[0].endswith("(SM activity max 0 %)")


# -- PCIe ------------------------------------------------------------------------------
def test_pcie_link_degraded_only_under_load() -> None:
    sim = Sim()
    sim.run(30, replace(IDLE, pcie_gen=1), processes=())
    assert sim.findings == ()
    sim.run(40, replace(BUSY, pcie_gen=3, pcie_width=8))
    f = finding(sim, "pcie-link-degraded")
    assert "Gen3 x8 (7.9 GB/s)" in f.evidence[0] and "Gen5 x16 (63.0 GB/s)" in f.evidence[0]


def test_pcie_slot_limits_a_newer_card() -> None:
    sim = Sim(devices=(replace(H100, pcie_max_gen=4, pcie_gpu_max_gen=5),))
    sim.run(30, replace(BUSY, pcie_gen=4))
    assert "pcie-link-degraded" not in sim.rules()  # the host's ceiling, not a fault
    f = finding(sim, "pcie-host-limited")
    assert f.severity == "info" and f.title == "The host limits this link to Gen4"


def test_pcie_saturated() -> None:
    sim = Sim()
    sim.run(30, replace(BUSY, pcie_gen=3, pcie_width=16, pcie_rx_bps=14e9))
    f = finding(sim, "pcie-saturated")
    assert "14.0 GB/s of 15.8 GB/s" in f.evidence[0]


def test_traffic_is_judged_against_the_link_it_went_over_not_the_idle_one() -> None:
    """12 GB/s on Gen5 x16 (19 %), then the GPU pauses and the link trains down to Gen1
    at once: the window's mean traffic against Gen1's 4 GB/s read "213 %"."""
    sim = Sim()
    for i in range(120):
        busy = i < 80
        sample = replace(
            BUSY if busy else IDLE,
            pcie_gen=5 if busy else 1,
            pcie_width=16,
            pcie_rx_bps=12e9 if busy else 0.0,
        )
        sim.tick([sample])
        assert "pcie-saturated" not in sim.rules(), i


def test_pcie_errors_from_a_rising_replay_counter() -> None:
    sim = Sim()
    sim.run(70, lambda i: replace(BUSY, pcie_replay_count=10 + i // 5))
    f = finding(sim, "pcie-errors")
    assert "(12 per minute)" in f.evidence[0]
    # an occasional replay on a healthy link: below DCGM's 8 a minute, no warning
    once = Sim()
    for i in range(180):
        once.tick([replace(BUSY, pcie_replay_count=17 if i < 100 else 18)])
        assert "pcie-errors" not in once.rules(), i
    sim2 = Sim()
    sim2.run(70, replace(BUSY, pcie_replay_count=1234))  # high but not rising: quiet
    assert "pcie-errors" not in sim2.rules()


# -- pipeline --------------------------------------------------------------------------
def starved_gpu(i: int) -> GpuSample:
    return replace(BUSY, util_gpu=95.0 if i % 4 == 0 else 1.0)


GIL_BOUND = replace(TRAINER, cpu_percent=99.0, children=0)


def test_input_starved_names_a_main_process_without_workers() -> None:
    sim = Sim()
    sim.run(40, starved_gpu, processes=(GIL_BOUND,))
    f = finding(sim, "input-starved")
    assert "loads every batch itself" in f.title
    assert any("99 % CPU with no data-loader workers (num_workers=0)" in e for e in f.evidence)
    assert f.remedies[0].startswith("Load in worker processes: DataLoader(num_workers=N)")


def test_input_starved_needs_a_cpu_side_cause() -> None:
    sim = Sim()
    sim.run(40, starved_gpu, processes=(replace(TRAINER, cpu_percent=20.0),))
    assert "input-starved" not in sim.rules()


def test_a_job_starting_on_an_idle_gpu_is_not_starved() -> None:
    sim = Sim()
    sim.run(12, IDLE, processes=())
    sim.run(25, BUSY, processes=(GIL_BOUND,))
    assert sim.findings == ()


def test_io_bound() -> None:
    sim = Sim()
    sim.run(
        60, replace(BUSY, util_gpu=35.0), host=replace(HOST, iowait_pct=40.0, disk_read_bps=9e8)
    )
    f = finding(sim, "io-bound")
    assert any("iowait 40 %" in e for e in f.evidence)
    # iowait swings with each read burst: once shown it stays through a quiet spell of less
    # than its window, and goes after one
    quiet = replace(HOST, iowait_pct=0.0, disk_read_bps=9e8)
    sim.run(45, replace(BUSY, util_gpu=35.0), host=quiet)  # its window emptied at ~15 s
    assert "io-bound" in sim.rules()
    sim.run(20, replace(BUSY, util_gpu=35.0), host=quiet)
    assert "io-bound" not in sim.rules()
    # 8 loaders blocked on reads on a 128-CPU host: 6 % iowait, 8 CPUs waiting
    loaders = replace(TRAINER, children=8, workers_cpu_percent=30.0)
    big = replace(HOST, cpu_count=128, iowait_pct=6.0, disk_read_bps=9e8)
    wide = Sim()
    wide.run(60, replace(BUSY, util_gpu=33.0), processes=(loaders,), host=big)
    assert any("of 128 CPUs (about 8 waiting)" in e for e in finding(wide, "io-bound").evidence)
    # a little background iowait on the same host is no storage problem
    calm = Sim()
    calm.run(
        60, replace(BUSY, util_gpu=33.0), processes=(loaders,), host=replace(big, iowait_pct=1.0)
    )
    assert "io-bound" not in calm.rules()


def test_straggler_against_peers_in_the_same_job() -> None:
    devices = [replace(H100, index=i) for i in range(4)]
    sim = Sim(devices=devices)
    procs = [replace(TRAINER, pid=100 + i, gpu_index=i, env=torchrun_env(i, 4)) for i in range(4)]
    for tick in range(50):
        gpus = [replace(BUSY, index=i) for i in range(3)] + [
            replace(BUSY, index=3, sm_clock_mhz=1500)
        ]
        sim.tick(gpus, procs)
        if tick < 30:  # ranks drift apart for seconds: a straggler holds a window first
            assert "straggler" not in sim.rules(), tick
    stragglers = [f for f in sim.findings if f.rule == "straggler"]
    assert [f.gpu for f in stragglers] == [3]
    assert "vs 99 % on its 3 peer(s)" in stragglers[0].evidence[0]


def test_the_worst_rank_is_a_straggler_however_idle_it_is() -> None:
    """Peers spin at 97 % in their collectives while one rank idles at 20 %: the lowest
    rank is the straggler (it was left out below the 30 % 'busy' line, the worse the
    less); a limit it never reaches is not named as its cause."""
    devices = [replace(H100, index=i) for i in range(4)]
    sim = Sim(devices=devices)
    procs = [replace(TRAINER, pid=100 + i, gpu_index=i, env=torchrun_env(i, 4)) for i in range(4)]
    for _ in range(60):
        gpus = [replace(BUSY, index=i, util_gpu=97.0) for i in range(3)] + [
            replace(BUSY, index=3, util_gpu=20.0, power_w=300.0, power_limit_w=650.0)
        ]
        sim.tick(gpus, procs)
    (f,) = [f for f in sim.findings if f.rule == "straggler"]
    assert f.gpu == 3 and "SM clock idle vs" in f.evidence[0]
    assert not any("found on this GPU" in e for e in f.evidence)
    assert "power-limit-lowered" not in f.remedies[0]


def test_no_straggler_between_different_jobs() -> None:
    devices = [replace(H100, index=i) for i in range(2)]
    sim = Sim(devices=devices)
    procs = [
        replace(TRAINER, gpu_index=0),
        replace(TRAINER, pid=9, gpu_index=1, command="python eval.py"),
    ]
    for _ in range(30):
        sim.tick([replace(BUSY, index=0), replace(BUSY, index=1, sm_clock_mhz=1200)], procs)
    assert "straggler" not in sim.rules()


# -- CUDA ------------------------------------------------------------------------------
def test_cuda_launch_blocking() -> None:
    sim = Sim()
    sim.run(10, BUSY, processes=(replace(TRAINER, env=("CUDA_LAUNCH_BLOCKING=1",)),))
    assert "CUDA_LAUNCH_BLOCKING=1" in finding(sim, "cuda-launch-blocking").evidence[0]
    sim2 = Sim()
    sim2.run(10, BUSY, processes=(replace(TRAINER, env=("CUDA_LAUNCH_BLOCKING=0",)),))
    assert sim2.findings == ()


def test_cuda_runtime_newer_than_driver() -> None:
    sim = Sim()
    sim.run(10, BUSY, processes=(replace(TRAINER, cuda_runtime="13.0"),))
    f = finding(sim, "cuda-driver-mismatch")
    assert f.severity == "critical" and "runtime 13.0" in f.evidence[0]
    for ok in ("12", "12.1", "11.8"):
        quiet = Sim()
        quiet.run(10, BUSY, processes=(replace(TRAINER, cuda_runtime=ok),))
        assert quiet.findings == (), ok
    old = Sim()
    old.run(10, BUSY, processes=(replace(TRAINER, cuda_runtime="10.2"),))
    assert finding(old, "cuda-driver-mismatch").severity == "info"


def test_persistence_off() -> None:
    sim = Sim(devices=(replace(H100, persistence_mode=False),))
    sim.run(10, IDLE, processes=())
    assert finding(sim, "persistence-off").severity == "info"


# -- health ----------------------------------------------------------------------------
def test_gpu_lost_is_critical_at_once() -> None:
    sim = Sim()
    sim.run(5, BUSY)
    sim.tick([GpuSample(index=0, lost=True)], ())
    f = finding(sim, "gpu-errors")
    assert f.severity == "critical" and "lost" in f.title


def test_uncorrectable_ecc_and_pending_remap() -> None:
    sim = Sim()
    sim.run(10, lambda i: replace(BUSY, ecc_volatile_uncorrected=0 if i < 5 else 2))
    f = finding(sim, "memory-health")
    assert f.severity == "critical"
    assert any("2 uncorrectable ECC error(s) since the driver loaded, +2" in e for e in f.evidence)
    sim2 = Sim()
    sim2.run(3, replace(BUSY, remapped_rows_pending=True))
    f = finding(sim2, "memory-health")
    assert f.severity == "warning" and "Reset the GPU when it is idle" in f.remedies[0]


# -- missing readings: silent, never a guess -------------------------------------------
def test_rules_stay_silent_without_readings() -> None:
    unknown = GpuSample(index=0)
    sim = Sim()
    sim.run(400, unknown, processes=(ProcessSample(pid=1, gpu_index=0),), host=None)
    assert sim.findings == ()


def test_board_without_thresholds_or_limits() -> None:
    bare = replace(
        H100,
        temp_slowdown_c=None,
        temp_shutdown_c=None,
        power_default_limit_w=None,
        pcie_max_gen=None,
        pcie_max_width=None,
        max_sm_clock_mhz=None,
    )
    sim = Sim(devices=(bare,))
    sim.run(60, replace(THROTTLED, clock_reasons=None, pcie_gen=1, power_limit_w=None))
    # Without the slowdown threshold or the reasons, throttling cannot be proven; 90 °C
    # against the absolute 80 °C mark can, and the evidence does not invent a limit.
    assert sim.rules() == {"thermal-hot"}
    assert sim.findings[0].evidence[0] == "90 °C"


# -- issue 11's readings in the rules ----------------------------------------------------
def test_the_applications_clocks_reason_alone_is_not_a_finding() -> None:
    """Drivers set it on busy GPUs at their default application clocks."""
    sim = Sim()
    sim.run(30, replace(BUSY, clock_reasons=ce.APPLICATIONS_CLOCKS))
    assert "clocks-limited" not in sim.rules()


def test_a_hardware_xid_is_critical_at_once_and_names_its_meaning() -> None:
    from gputui.core.model import XidEvent

    sim = Sim()
    sim.run(12, BUSY)
    sim.run(1, replace(BUSY, xid_events=(XidEvent(48, sim.now - 1),)))
    sim.run(3, BUSY)  # the event arrived once; the rule keeps it in view
    f = finding(sim, "gpu-errors")
    assert f.severity == "critical"
    assert any("Xid 48 (double-bit ECC error; memory)" in e for e in f.evidence)


def test_an_application_xid_is_a_warning_that_points_at_the_application() -> None:
    from gputui.core.model import XidEvent

    sim = Sim()
    sim.run(12, BUSY)
    sim.run(1, replace(BUSY, xid_events=(XidEvent(31, sim.now - 1), XidEvent(45, sim.now))))
    f = finding(sim, "gpu-errors")
    assert f.severity == "warning"
    assert any("application" in e for e in f.evidence)
    assert not any("Xid 45" in e for e in f.evidence)  # a process ending is no error


def test_throttle_evidence_says_how_long_the_driver_counted_it_held() -> None:
    sim = Sim()
    sim.run(
        40,
        lambda i: replace(
            BUSY,
            temp_c=90.0,
            sm_clock_mhz=1380,
            clock_reasons=ce.SW_THERMAL | ce.HW_THERMAL,
            violation_thermal_s=1000.0 + 0.8 * i,
        ),
    )
    f = finding(sim, "thermal-throttle")
    assert any(
        "held down by a thermal limit" in e and "driver's violation counter" in e
        for e in f.evidence
    )


def test_a_gpu_that_stops_reporting_while_others_do_is_a_warning() -> None:
    from gputui.advisor import make_advisor
    from gputui.core.model import DeviceInfo, Frame
    from gputui.sampling.history import History

    devices = [replace(H100, index=i, node=f"node-{i}") for i in range(2)]
    advisor = make_advisor(devices)
    history = History(100)
    for t in range(21):
        gpus = (replace(BUSY, index=0), replace(BUSY, index=1))
        history.add(Frame(time=float(t), gpus=gpus if t < 10 else gpus[:1]))
        advisor.update(history)
    (f,) = [f for f in advisor.findings if f.rule == "not-reporting"]
    assert f.gpu == 1 and f.severity == "warning"
    # last seen at 9 s, last judged at 20 s
    assert "on node node-1 for 11 s, while others report" in f.evidence[0]
    assert isinstance(devices[0], DeviceInfo)


def test_nothing_read_at_all_is_the_sources_failure_not_a_finding() -> None:
    from gputui.advisor import make_advisor
    from gputui.core.model import Frame
    from gputui.sampling.history import History

    advisor = make_advisor([H100])
    history = History(100)
    for t in range(20):
        history.add(Frame(time=float(t), gpus=(BUSY,) if t < 5 else ()))
        advisor.update(history)
    assert "not-reporting" not in {f.rule for f in advisor.findings}
