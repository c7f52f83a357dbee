"""Situations operators meet most, each named for itself: which ones the advisor calls a
problem (and names the cause of), and which it leaves calm. Synthetic history, one tick a
second (tests/advisor_kit.py)."""

from __future__ import annotations

from dataclasses import replace

from gputui.core import clock_events as ce
from gputui.core.model import GpuSample, ProcessSample
from tests.advisor_kit import BUSY, GIB, H100, HOST, TRAINER, Sim, alarms, torchrun_env

AT_LIMIT = replace(BUSY, power_w=692.0, sm_clock_mhz=1500, clock_reasons=ce.SW_POWER_CAP)


# -- power: a cap at the default limit is the board working as designed ------------------
def test_an_h200_class_board_at_its_default_limit_under_load_is_info_only() -> None:
    sim = Sim()
    sim.run(40, AT_LIMIT)
    (f,) = sim.findings
    assert f.rule == "power-cap" and f.severity == "info"
    assert "700 W default power limit" in f.title and not alarms(sim.findings)


def test_a_cap_under_a_lowered_limit_is_a_warning_naming_the_default() -> None:
    lowered = replace(H100, power_limit_w=500.0)
    sim = Sim(devices=[lowered])
    sim.run(40, replace(AT_LIMIT, power_w=497.0, power_limit_w=500.0))
    cap = next(f for f in sim.findings if f.rule == "power-cap")
    assert cap.severity == "warning"
    assert any("lowered from the default 700 W" in e for e in cap.evidence)
    assert "sudo nvidia-smi -i 0 -pl 700" in cap.remedies[0]


def test_a_cap_on_a_hot_board_is_a_warning_with_cooling_first() -> None:
    sim = Sim()
    sim.run(40, replace(AT_LIMIT, temp_c=86.0))  # max operating 87 °C
    (f,) = [f for f in sim.findings if f.rule == "power-cap"]
    assert f.severity == "warning"
    assert any("capped while hot: 86 °C" in e for e in f.evidence)
    assert f.remedies[0].startswith("Cool the board")  # the cause first
    # at its default limit already: no root command that would change nothing
    assert not any("-pl" in r for r in f.remedies)


def test_a_cap_with_clocks_far_below_the_boards_maximum_is_a_warning() -> None:
    sim = Sim()
    sim.run(40, replace(AT_LIMIT, sm_clock_mhz=900))
    (f,) = [f for f in sim.findings if f.rule == "power-cap"]
    assert f.severity == "warning" and any(
        "far below what the board holds" in e for e in f.evidence
    )


# -- heat ------------------------------------------------------------------------------
def test_a_geforce_board_at_its_own_target_temperature_is_calm() -> None:
    geforce = replace(
        H100,
        name="NVIDIA GeForce RTX 3090",
        temp_gpu_max_c=85.0,
        temp_slowdown_c=93.0,
        temp_target_c=83.0,
        temp_mem_max_c=None,
    )
    at_target = replace(BUSY, temp_c=83.0)
    sim = Sim(devices=[geforce])
    sim.run(60, at_target)
    assert "thermal-hot" not in sim.rules()
    # the same board without a target reported: 83 °C is 2 °C from its 85 °C limit
    untargeted = Sim(devices=[replace(geforce, temp_target_c=None)])
    untargeted.run(60, at_target)
    assert "thermal-hot" in untargeted.rules()


def test_hbm_at_its_limit_is_named_as_the_cause_not_the_cool_core() -> None:
    hbm = replace(H100, temp_mem_max_c=95.0)
    sim = Sim(devices=[hbm])
    sim.run(40, replace(BUSY, temp_c=61.0, mem_temp_c=94.0))
    (f,) = [f for f in sim.findings if f.rule == "thermal-hot"]
    assert "HBM memory is at its temperature limit" in f.title
    assert f.evidence[0].startswith("memory (HBM) 94 °C, its maximum 95 °C: the memory is at")
    assert "not the core (61 °C" in f.evidence[0]
    throttled = Sim(devices=[hbm])
    throttled.run(40, replace(BUSY, temp_c=61.0, mem_temp_c=96.0, clock_reasons=ce.HW_THERMAL))
    (t,) = [f for f in throttled.findings if f.rule == "thermal-throttle"]
    assert "HBM memory is at its temperature limit" in t.title
    assert any("airflow over the memory" in r for r in t.remedies)


def test_one_hot_gpu_among_cool_ones_points_at_its_own_fan_and_slot_first() -> None:
    sim = Sim(devices=[replace(H100, index=i) for i in range(4)])
    for _ in range(40):
        gpus = [replace(BUSY, index=i, temp_c=86.5 if i == 2 else 64.0) for i in range(4)]
        sim.tick(gpus, [replace(TRAINER, gpu_index=i, pid=100 + i) for i in range(4)])
    (f,) = [f for f in sim.findings if f.rule == "thermal-hot"]
    assert f.gpu == 2
    assert f.remedies[0].startswith("Only this GPU is hot (86 °C, its 3 peer(s) 64 °C)")
    # all of them hot: the room may be the cause, no GPU singled out
    room = Sim(devices=[replace(H100, index=i) for i in range(4)])
    for _ in range(40):
        room.tick([replace(BUSY, index=i, temp_c=86.5) for i in range(4)])
    assert not any(r.startswith("Only this GPU") for f in room.findings for r in f.remedies)


def test_a_few_hot_gpus_among_many_are_not_each_called_the_only_one() -> None:
    hot = {3, 17, 18, 40, 41, 42, 60, 63}
    sim = Sim(devices=[replace(H100, index=i) for i in range(64)])
    for _ in range(40):
        sim.tick([replace(BUSY, index=i, temp_c=86.5 if i in hot else 64.0) for i in range(64)])
    found = [f for f in sim.findings if f.rule == "thermal-hot"]
    assert {f.gpu for f in found} == hot
    assert not any(r.startswith("Only this GPU") for f in found for r in f.remedies)
    (first,) = [f for f in found if f.gpu == 3]
    assert first.remedies[0].startswith(
        "8 of 64 GPUs here are hot (this one 86 °C, with GPUs 17, 18, 40, 41, 42, 60, ...; "
        "the other 56 64 °C): check what the hot ones share first"
    )
    # half of them hot or more: nothing to single out, the room is a cause too
    half = Sim(devices=[replace(H100, index=i) for i in range(4)])
    for _ in range(40):
        half.tick([replace(BUSY, index=i, temp_c=86.5 if i < 2 else 64.0) for i in range(4)])
    assert [f.gpu for f in half.findings if f.rule == "thermal-hot"] == [0, 1]
    assert not any(" GPUs here are hot" in r for f in half.findings for r in f.remedies)


# -- memory ----------------------------------------------------------------------------
def test_growing_vram_asks_what_holds_it_before_a_smaller_batch() -> None:
    sim = Sim()
    sim.run(120, lambda i: replace(BUSY, mem_used=int((50 + 0.2 * i) * GIB)))
    (f,) = [f for f in sim.findings if f.rule == "vram-pressure"]
    assert f.remedies[0].startswith("Find what holds the memory")
    assert "_record_memory_history" in f.remedies[0]
    assert any("smaller batch" in r for r in f.remedies[1:])


# -- stragglers ------------------------------------------------------------------------
def test_a_straggler_names_the_cause_found_on_it() -> None:
    sim = Sim(devices=[replace(H100, index=i) for i in range(4)])
    procs = [replace(TRAINER, pid=100 + i, gpu_index=i, env=torchrun_env(i, 4)) for i in range(4)]
    hot = replace(BUSY, temp_c=90.0, sm_clock_mhz=1300, clock_reasons=ce.THERMAL_BITS)
    for _ in range(40):
        sim.tick([replace(hot if i == 3 else BUSY, index=i) for i in range(4)], procs)
    (f,) = [f for f in sim.findings if f.rule == "straggler"]
    assert f.gpu == 3
    assert any(e.startswith("found on this GPU: thermal-throttle") for e in f.evidence)
    assert f.remedies[0].startswith("Fix GPU 3's thermal-throttle first")


# -- several jobs on one GPU -----------------------------------------------------------
def _on_gpu0(*procs: ProcessSample) -> tuple[ProcessSample, ...]:
    return tuple(replace(p, gpu_index=0) for p in procs)


def test_two_users_time_slicing_one_gpu_are_named() -> None:
    alice = replace(TRAINER, pid=101, user="alice", sm_util=48.0, gpu_memory=30 * GIB)
    bob = replace(TRAINER, pid=202, user="bob", name="python", sm_util=41.0, ppid=9)
    sim = Sim()
    sim.run(40, BUSY, processes=_on_gpu0(alice, bob))
    (f,) = [f for f in sim.findings if f.rule == "gpu-shared"]
    assert f.severity == "warning"
    assert f.evidence[0].startswith("2 jobs time-slice this GPU, of 2 users")
    assert any("pid 101 alice" in e for e in f.evidence)
    assert any("pid 202 bob" in e for e in f.evidence)


def test_ranks_of_one_job_or_an_idle_holder_or_mps_are_not_sharing() -> None:
    rank0 = replace(TRAINER, pid=101, sm_util=45.0, env=torchrun_env(0, 2))
    rank1 = replace(TRAINER, pid=102, sm_util=44.0, env=torchrun_env(1, 2))
    one_job = Sim()
    one_job.run(40, BUSY, processes=_on_gpu0(rank0, rank1))
    assert "gpu-shared" not in one_job.rules()
    holder = replace(TRAINER, pid=303, user="carol", sm_util=0.0, cpu_percent=1.0)
    idle = Sim()
    idle.run(40, BUSY, processes=_on_gpu0(replace(TRAINER, sm_util=90.0), holder))
    assert "gpu-shared" not in idle.rules()
    mps = Sim()
    clients = (
        replace(TRAINER, pid=1, user="a", sm_util=40.0, kind="compute+mps"),
        replace(TRAINER, pid=2, user="b", sm_util=40.0, kind="compute+mps"),
    )
    mps.run(40, BUSY, processes=_on_gpu0(*clients))
    assert "gpu-shared" not in mps.rules()


# -- input starvation as the driver shows it ---------------------------------------------
WORKERS_FLAT_OUT = replace(TRAINER, cpu_percent=41.0, children=4, workers_cpu_percent=399.0)


def _ticks(i: int) -> GpuSample:
    return replace(BUSY, util_gpu=(31.0, 48.0, 55.0, 37.0, 44.0)[i % 5])  # never idle


def test_workers_at_a_core_each_with_the_gpu_at_30_to_60_percent_are_starvation() -> None:
    sim = Sim()
    sim.run(40, _ticks, processes=(WORKERS_FLAT_OUT,))
    (f,) = [f for f in sim.findings if f.rule == "input-starved"]
    assert "data-loader workers cannot keep up" in f.title
    assert any("4 data-loader workers at 100 % of a core each" in e for e in f.evidence)
    assert f.remedies[0] == "Raise DataLoader num_workers (now 4): the host has idle cores"


def test_workers_flat_out_on_a_full_host_ask_for_cheaper_batches_not_more_workers() -> None:
    full = replace(HOST, cpu_percent=97.0, run_queue=90)
    sim = Sim()
    sim.run(40, _ticks, processes=(WORKERS_FLAT_OUT,), host=full)
    (f,) = [f for f in sim.findings if f.rule == "input-starved"]
    assert f.remedies[0].startswith("Every host core is busy: more workers will not help")
    assert any("host CPU 97 % busy over 64 cores, run queue 90" in e for e in f.evidence)


def test_a_host_whose_cores_other_work_takes_is_named() -> None:
    full = replace(HOST, cpu_percent=99.0, run_queue=140)
    easy = replace(TRAINER, cpu_percent=40.0, children=4, workers_cpu_percent=120.0)
    sim = Sim()
    sim.run(40, _ticks, processes=(easy,), host=full)
    (f,) = [f for f in sim.findings if f.rule == "input-starved"]
    assert "host's CPUs are all taken" in f.title


def test_compile_workers_idle_beside_the_loaders_do_not_hide_them() -> None:
    # 4 loaders at a core each among 32 idle torch.compile workers: 400 % over 36 children
    crowd = replace(WORKERS_FLAT_OUT, children=36, workers_cpu_percent=402.0, workers_active=4)
    sim = Sim()
    sim.run(40, _ticks, processes=(crowd,))
    assert "input-starved" in sim.rules()


def test_a_checkpoint_gap_among_full_ticks_is_not_starvation() -> None:
    saving = replace(TRAINER, cpu_percent=100.0, children=0)
    sim = Sim()
    sim.run(40, lambda i: replace(BUSY, util_gpu=0.0 if 10 <= i < 22 else 98.0), (saving,))
    assert "input-starved" not in sim.rules()


def test_a_gpu_running_flat_out_with_busy_workers_is_fed() -> None:
    sim = Sim()
    sim.run(40, BUSY, processes=(WORKERS_FLAT_OUT,))
    assert "input-starved" not in sim.rules()


def test_no_alarm_on_an_idle_gpu_whatever_its_process_does() -> None:
    idle = replace(BUSY, util_gpu=0.0, power_w=70.0, clock_reasons=ce.GPU_IDLE)
    sim = Sim()
    sim.run(60, idle, processes=(replace(TRAINER, cpu_percent=100.0, children=0),))
    assert not alarms(sim.findings)


def test_run_queue_over_the_cores_counts_as_a_saturated_host() -> None:
    queued = replace(HOST, cpu_percent=70.0, run_queue=200)  # 64 cores
    easy = replace(TRAINER, cpu_percent=40.0, children=4, workers_cpu_percent=100.0)
    sim = Sim()
    sim.run(40, _ticks, processes=(easy,), host=queued)
    (f,) = [f for f in sim.findings if f.rule == "input-starved"]
    assert any("run queue 200" in e for e in f.evidence)
