"""Issue 12: the advisor on real workloads. No false alarm on a healthy job, no false
all-clear. Each case of the issue is a test named for it, on synthetic history.

The figures are ours, written from published facts (cited per test): NVIDIA's CUDA
compatibility guide (minor-version compatibility from R525, the cuda-compat forward-
compatibility package), PyTorch's CUDA semantics notes (the caching allocator keeps freed
blocks reserved), JAX's GPU memory allocation page (75 % preallocated), TensorFlow's
TF_FORCE_GPU_ALLOW_GROWTH, vLLM's gpu_memory_utilization=0.9, `nvidia-smi -q` of an H100
SXM (Shutdown 92 C, Slowdown 89 C, Max Operating 87 C, Memory Max Operating 95 C) and
NVIDIA's note that RTX 40 cards hold 83 C under load by design (GPU Boost's target).
"""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor.cuda import compat_library
from gputui.advisor.memory import likely_allocator
from gputui.core import clock_events as ce
from gputui.core.judgement import Undecided
from gputui.core.model import DeviceInfo, GpuSample
from tests.advisor_kit import (
    BUSY,
    GIB,
    H100,
    HOST,
    IDLE,
    TRAINER,
    Sim,
    alarms,
    torchrun_env,
)

RTX_4090 = DeviceInfo(
    index=0,
    name="NVIDIA GeForce RTX 4090",
    memory_total=24 * GIB,
    max_sm_clock_mhz=3105,
    temp_slowdown_c=90.0,
    temp_shutdown_c=95.0,
    temp_gpu_max_c=90.0,
    power_limit_w=450.0,
    power_default_limit_w=450.0,
    pcie_max_gen=4,
    pcie_max_width=16,
    pcie_gpu_max_gen=4,
    persistence_mode=True,
    driver_version="550.54.15",
    cuda_driver_version="12.4",
)


def info_only(sim: Sim) -> bool:
    return not alarms(sim.findings)


# -- VRAM ---------------------------------------------------------------------------
def test_pytorch_caching_allocator_plateau_at_97_percent_is_calm() -> None:
    sim = Sim()
    proc = replace(
        TRAINER,
        gpu_memory=int(77 * GIB),
        env=("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",),
        cuda_libraries=("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",),
    )
    sim.run(180, replace(BUSY, mem_used=int(77.6 * GIB)), processes=(proc,))
    assert info_only(sim)
    (f,) = sim.findings
    assert f.rule == "vram-reserved" and f.severity == "info"
    assert any("PyTorch's caching allocator" in e for e in f.evidence)
    assert not any("full in about" in e for e in f.evidence)  # no time-to-full on a plateau


def test_pytorch_plateau_at_99_percent_after_a_warm_up_ramp_is_calm() -> None:
    sim = Sim()
    sim.run(180, lambda i: replace(BUSY, mem_used=int(min(79.2, 40 + 2 * i) * GIB)))
    assert info_only(sim)


def test_tensorflow_and_jax_preallocation_is_calm() -> None:
    for env, libs, words in (
        (("TF_FORCE_GPU_ALLOW_GROWTH=false",), (), "TensorFlow maps nearly all"),
        ((), ("/venv/lib/libtensorflow_framework.so.2",), "TensorFlow maps nearly all"),
        (("XLA_PYTHON_CLIENT_MEM_FRACTION=.95",), (), "JAX/XLA preallocates .95"),
        ((), ("/venv/jaxlib/xla_extension.so",), "JAX/XLA preallocates 75 %"),
    ):
        sim = Sim()
        proc = replace(TRAINER, env=env, cuda_libraries=libs)
        sim.run(120, replace(BUSY, mem_used=int(76 * GIB)), processes=(proc,))
        assert info_only(sim), env
        assert any(words in e for f in sim.findings for e in f.evidence), (env, libs)


def test_vllm_at_90_percent_by_design_is_calm() -> None:
    sim = Sim()
    proc = replace(TRAINER, command="python -m vllm.entrypoints.openai.api_server --model x")
    sim.run(120, replace(BUSY, mem_used=int(72.5 * GIB)), processes=(proc,))
    assert info_only(sim)
    assert "vLLM" in (likely_allocator((proc,)) or "")


def test_the_allocator_named_is_the_one_the_environment_leaves() -> None:
    """Growth on demand turned on (TF) or preallocation off (JAX): the framework did not
    reserve the card at start, and the plateau is not explained as if it had."""

    def said(*env: str) -> str:
        return likely_allocator((replace(TRAINER, env=env),)) or ""

    assert said("TF_FORCE_GPU_ALLOW_GROWTH=true").startswith("TensorFlow grows its memory")
    assert said("TF_FORCE_GPU_ALLOW_GROWTH=false").startswith("TensorFlow maps nearly all")
    assert said("XLA_PYTHON_CLIENT_PREALLOCATE=false").startswith("JAX/XLA grows its memory")
    assert said("XLA_PYTHON_CLIENT_MEM_FRACTION=.5") == (
        "JAX/XLA preallocates .5 of the card (XLA_PYTHON_CLIENT_* set)"
    )


def test_memory_growing_toward_full_fires_with_time_to_full() -> None:
    sim = Sim()
    sim.run(120, lambda i: replace(BUSY, mem_used=int((50 + 0.2 * i) * GIB)))
    f = next(f for f in sim.findings if f.rule == "vram-pressure")
    assert f.severity == "critical"  # 26 GiB left at 12 GiB/min
    assert any("growing 12.0 GiB/min" in e and "full in about" in e for e in f.evidence)
    assert any("over the last 1 min 00 s" in e for e in f.evidence)


def test_time_to_full_only_while_growing() -> None:
    sim = Sim()
    sim.run(90, lambda i: replace(BUSY, mem_used=int((50 + 0.25 * i) * GIB)))
    assert "vram-pressure" in sim.rules()
    sim.run(90, replace(BUSY, mem_used=int(72.5 * GIB)))  # it stopped growing: a plateau
    assert "vram-pressure" not in sim.rules()
    assert not any("full in about" in e for f in sim.findings for e in f.evidence)


def test_allocation_ceiling_reached_while_utilisation_drops_fires() -> None:
    sim = Sim()
    sim.run(60, lambda i: replace(BUSY, mem_used=int((76 + min(i, 30) / 10) * GIB)))
    assert "vram-pressure" not in sim.rules()
    sim.run(20, replace(BUSY, mem_used=int(79 * GIB), util_gpu=35.0))
    f = next(f for f in sim.findings if f.rule == "vram-pressure")
    assert f.severity == "critical" and "ceiling" in f.title
    assert any("utilisation fell" in e for e in f.evidence)


def test_a_pause_of_a_job_flat_at_the_ceiling_is_no_memory_pressure() -> None:
    """PyTorch's cache holds 98 % of the card for the whole run; a 40 s checkpoint save
    (no kernels, memory unchanged) is a pause, not allocation retries at the ceiling."""
    held = int(78.4 * GIB)
    sim = Sim()
    for i in range(260):
        pause = 200 <= i < 240
        busy = replace(BUSY, mem_used=held, util_gpu=0.0 if pause else 97.0)
        sim.tick([busy], [replace(TRAINER, gpu_memory=held)])
        assert "vram-pressure" not in sim.rules(), i
    # the allocator giving blocks back and taking them again at the ceiling: pressure
    for i in range(40):
        churn = int((78.4 - 1.2 * (i % 2)) * GIB)
        sim.tick([replace(BUSY, mem_used=churn, util_gpu=0.0 if i % 2 else 90.0)])
    (pressure,) = [f for f in sim.findings if f.rule == "vram-pressure"]
    assert pressure.severity == "critical" and "ceiling" in pressure.title


def test_memory_loaded_while_the_gpu_waits_is_no_leak() -> None:
    """Weights stream in at 1 GB/s on an idle GPU: a load, not out-of-memory ahead; and a
    busy job's warm-up climbing 45 s, then flat, says nothing either."""
    sim = Sim()
    for i in range(90):
        used = int(GIB + min(i, 60) * 1e9)
        sim.tick([replace(IDLE, mem_used=used)], [replace(TRAINER, gpu_memory=used)])
        assert "vram-pressure" not in sim.rules(), i
    warm = Sim()
    for i in range(120):
        used = int(40 * GIB + min(i, 45) * 0.5e9)
        warm.tick([replace(BUSY, mem_used=used)], [replace(TRAINER, gpu_memory=used)])
        assert "vram-pressure" not in warm.rules(), i


def test_host_memory_and_swap_filling_in_step_fires() -> None:
    sim = Sim()
    sim.run(
        60,
        replace(BUSY, mem_used=int(76 * GIB)),
        host=lambda i: replace(HOST, swap_total=64 * GIB, swap_used=int(i * 50e6)),
    )
    f = next(f for f in sim.findings if f.rule == "vram-pressure")
    assert f.severity == "warning" and "host" in f.title
    assert any("swap growing" in e for e in f.evidence)


# -- CUDA versions -------------------------------------------------------------------
def test_cuda_12_4_runtime_on_a_12_2_driver_is_minor_version_compatible() -> None:
    sim = Sim(devices=(replace(H100, cuda_driver_version="12.2", driver_version="535.54.03"),))
    proc = replace(TRAINER, cuda_runtime="12.4", cuda_runtime_evidence="torch/version.py")
    sim.run(20, BUSY, processes=(proc,))
    assert info_only(sim)
    (f,) = sim.findings
    assert "minor-version compatibility" in f.title
    assert any("read from torch/version.py" in e for e in f.evidence)


def test_cuda_compat_forward_compatibility_is_calm() -> None:
    compat = "/usr/local/cuda-12.6/compat/libcuda.so.560.35.03"
    sim = Sim(devices=(replace(H100, cuda_driver_version="11.8", driver_version="520.61.05"),))
    proc = replace(TRAINER, cuda_runtime="12.6", cuda_libraries=(compat,))
    sim.run(20, BUSY, processes=(proc,))
    assert info_only(sim)
    assert compat_library((compat,)) == compat
    assert any(compat in e for f in sim.findings for e in f.evidence)


def test_a_different_cuda_major_without_compat_is_the_real_mismatch() -> None:
    sim = Sim(devices=(replace(H100, cuda_driver_version="11.8", driver_version="520.61.05"),))
    proc = replace(TRAINER, cuda_runtime="12.1", cuda_libraries=("/usr/lib/libcuda.so.1",))
    sim.run(20, BUSY, processes=(proc,))
    f = next(f for f in sim.findings if f.rule == "cuda-driver-mismatch")
    assert f.severity == "critical"
    assert any("no forward-compatibility libcuda" in e for e in f.evidence)


# -- thermal -------------------------------------------------------------------------
def test_rtx_4090_at_83_c_under_load_without_throttle_reason_is_calm() -> None:
    sim = Sim(devices=(RTX_4090,))
    warm = replace(
        BUSY, temp_c=83.0, sm_clock_mhz=2730, power_w=420.0, power_limit_w=450.0, pcie_gen=4
    )
    sim.run(120, replace(warm, mem_used=int(18 * GIB), mem_total=24 * GIB))
    assert sim.findings == ()


def test_h100_at_86_c_with_max_operating_87_c_fires() -> None:
    sim = Sim()
    sim.run(40, replace(BUSY, temp_c=86.0, temp_margin_c=3.0))
    f = next(f for f in sim.findings if f.rule == "thermal-hot")
    assert f.severity == "warning"
    assert any("1 °C from the board's max operating temperature (87 °C)" in e for e in f.evidence)
    for temp, said in ((88.0, "88 °C, 1 °C above the board's"), (87.0, "87 °C, at the board's")):
        over = Sim()
        over.run(40, replace(BUSY, temp_c=temp, temp_margin_c=1.0))
        hot = next(f for f in over.findings if f.rule == "thermal-hot")
        assert any(e.startswith(said) for e in hot.evidence), hot.evidence
        assert not any("°C/min" in e and "-0.0" in e for e in hot.evidence)


def test_hbm_at_its_maximum_fires() -> None:
    sim = Sim(devices=(replace(H100, temp_mem_max_c=95.0),))
    sim.run(40, replace(BUSY, temp_c=70.0, mem_temp_c=94.0))
    f = next(f for f in sim.findings if f.rule == "thermal-hot")
    assert any("memory (HBM) 94 °C, its maximum 95 °C" in e for e in f.evidence)


# -- HW slowdown ---------------------------------------------------------------------
def test_one_second_hw_slowdown_blip_on_an_idle_gpu_is_calm() -> None:
    sim = Sim()
    sim.run(
        120,
        lambda i: replace(IDLE, clock_reasons=ce.GPU_IDLE | (ce.HW_SLOWDOWN if i == 60 else 0)),
        processes=(),
    )
    assert sim.findings == ()


def test_one_reading_of_hw_slowdown_at_a_scrape_cadence_proves_no_time() -> None:
    """At a 15 s Prometheus scrape a single reading with the bit is one instant, as at 1 s:
    no critical for it; two readings in a row are 15 s of it at least, and count."""
    node_gpu = replace(H100, node="node-a", node_index=0)
    for blips in (1, 2):
        sim = Sim(devices=[node_gpu])
        shown = False
        for i in range(40):
            hw = 20 <= i < 20 + blips
            sim.tick([replace(BUSY, clock_reasons=ce.HW_SLOWDOWN if hw else 0)])
            sim.now += 14.0
            shown |= "hw-slowdown" in sim.rules()
        assert shown == (blips == 2), blips


def test_sustained_hw_slowdown_under_load_is_critical_as_a_share_of_busy_time() -> None:
    sim = Sim()
    # half the window idle, the busy half slowed down throughout
    sim.run(
        40,
        lambda i: (
            replace(BUSY, clock_reasons=ce.HW_SLOWDOWN, sm_clock_mhz=990)
            if i % 2
            else replace(IDLE, clock_reasons=ce.GPU_IDLE)
        ),
    )
    f = next(f for f in sim.findings if f.rule == "hw-slowdown")
    assert f.severity == "critical"
    assert any("slowdown in 100 % of the busy time" in e for e in f.evidence), f.evidence


def test_hw_slowdown_evidence_names_only_reasons_that_occurred() -> None:
    sim = Sim()
    sim.run(30, replace(BUSY, clock_reasons=ce.HW_SLOWDOWN, sm_clock_mhz=990))
    f = next(f for f in sim.findings if f.rule == "hw-slowdown")
    assert not any("power brake" in e for e in f.evidence)


# -- PCIe ----------------------------------------------------------------------------
def test_gen5_card_in_a_gen4_host_at_gen4_x16_is_an_info_line() -> None:
    sim = Sim(devices=(replace(H100, pcie_max_gen=4, pcie_gpu_max_gen=5),))
    sim.run(60, replace(BUSY, pcie_gen=4, pcie_width=16))
    assert info_only(sim)
    assert [f.rule for f in sim.findings] == ["pcie-host-limited"]


def test_a_width_below_max_under_load_stays_a_warning() -> None:
    sim = Sim()
    sim.run(40, replace(BUSY, pcie_width=8))
    f = next(f for f in sim.findings if f.rule == "pcie-link-degraded")
    assert f.severity == "warning" and any("width x8 of x16" in e for e in f.evidence)


def test_a_link_that_trained_down_after_errors_is_still_found() -> None:
    sim = Sim()
    sim.run(30, BUSY)
    sim.run(40, lambda i: replace(BUSY, pcie_gen=3, pcie_replay_count=10 + i))
    f = next(f for f in sim.findings if f.rule == "pcie-link-degraded")
    assert any("trained to Gen3" in e for e in f.evidence)
    assert any("replay counter" in e for e in f.evidence)


# -- stragglers ----------------------------------------------------------------------
def _four(slow: GpuSample) -> list[GpuSample]:
    return [replace(BUSY, index=i) for i in range(3)] + [replace(slow, index=3)]


def test_hyperparameter_sweep_of_independent_runs_is_not_a_straggler() -> None:
    sim = Sim(devices=[replace(H100, index=i) for i in range(4)])
    procs = [
        replace(TRAINER, pid=100 + i, gpu_index=i, command=f"python train.py --lr {lr}")
        for i, lr in enumerate(("1e-4", "3e-4", "1e-3", "3e-3"))
    ]
    for _ in range(40):
        sim.tick(_four(replace(BUSY, sm_clock_mhz=1400, util_gpu=60.0)), procs)
    assert "straggler" not in sim.rules()


def test_a_real_straggler_among_ranks_of_one_torchrun_job_fires() -> None:
    sim = Sim(devices=[replace(H100, index=i) for i in range(4)])
    procs = [replace(TRAINER, pid=100 + i, gpu_index=i, env=torchrun_env(i, 4)) for i in range(4)]
    for _ in range(40):
        sim.tick(_four(replace(BUSY, sm_clock_mhz=1400)), procs)
    (f,) = [f for f in sim.findings if f.rule == "straggler"]
    assert f.gpu == 3 and any("MASTER" not in e and "torch" in e for e in f.evidence)


def test_two_torchrun_jobs_on_one_node_are_not_peers() -> None:
    sim = Sim(devices=[replace(H100, index=i) for i in range(4)])
    procs = [
        replace(TRAINER, pid=100 + i, gpu_index=i, env=torchrun_env(i % 2, 2, 29500 + i // 2))
        for i in range(4)
    ]
    for _ in range(40):
        sim.tick(
            [replace(BUSY, index=i, sm_clock_mhz=1400 if i >= 2 else 1965) for i in range(4)],
            procs,
        )
    assert "straggler" not in sim.rules()


# -- input pipeline ------------------------------------------------------------------
def _bursty(i: int) -> GpuSample:
    return replace(BUSY, util_gpu=95.0 if i % 3 == 0 else 2.0)


def test_num_workers_0_main_at_280_percent_is_starved_as_on_a_real_h200() -> None:
    # An H200 recording (benchmarks/real_workloads.py, starved-main): the main process makes
    # every batch itself at 282 % CPU (PyTorch's OpenMP threads spin beside it), the GPU
    # reads 34-41 % tick after tick and is never idle.
    sim = Sim()
    main = replace(TRAINER, cpu_percent=282.0, children=0, workers_cpu_percent=0.0)
    sim.run(40, lambda i: replace(BUSY, util_gpu=36.0 + i % 5), processes=(main,))
    f = next(f for f in sim.findings if f.rule == "input-starved")
    assert "loads every batch itself" in f.title
    assert any("282 % CPU with no data-loader workers (num_workers=0)" in e for e in f.evidence)


def test_a_busy_main_beside_idle_workers_names_no_loader_cause() -> None:
    # A CUDA program spins a core while it waits for the GPU or a copy: a main process at
    # one core beside workers that keep up is no evidence of a loading bottleneck.
    sim = Sim()
    proc = replace(TRAINER, cpu_percent=99.0, children=2, workers_cpu_percent=20.0)
    sim.run(40, _bursty, processes=(proc,))
    assert "input-starved" not in sim.rules()


def test_short_stalls_between_ticks_show_in_the_driver_samples() -> None:
    # every tick averages 67 %: the 1 s mean hides that the GPU waits a third of the time
    stalls = (100.0, 100.0, 0.0, 100.0, 100.0, 0.0) * 1
    sim = Sim()
    proc = replace(TRAINER, cpu_percent=99.0, children=0)
    sim.run(40, replace(BUSY, util_gpu=67.0, util_samples=stalls), processes=(proc,))
    f = next(f for f in sim.findings if f.rule == "input-starved")
    assert any("samples agree: mean 67 % over" in e and "of them idle" in e for e in f.evidence)


# -- under-used, cause not visible ---------------------------------------------------
def test_under_used_with_no_known_cause_is_an_info_finding_after_minutes() -> None:
    sim = Sim()
    quiet = replace(TRAINER, cpu_percent=40.0)
    samples = (100.0, 0.0, 0.0, 100.0, 0.0, 0.0)
    sim.run(30, replace(BUSY, util_gpu=34.0, util_samples=samples), processes=(quiet,))
    assert "under-used" not in sim.rules()  # not yet: it needs minutes
    watching = sim.advisor.judgement.of(Undecided.PENDING)
    assert any(n.rule == "under-used" for n in watching)
    sim.run(120, replace(BUSY, util_gpu=34.0, util_samples=samples), processes=(quiet,))
    (f,) = [f for f in sim.findings if f.rule == "under-used"]
    assert f.severity == "info"
    assert any("of the driver's utilisation samples" in e for e in f.evidence)
    assert any("torch.profiler" in r for r in f.remedies)
    assert any("nsys profile" in r for r in f.remedies)


def test_a_gpu_that_does_no_work_is_idle_not_under_used() -> None:
    """A notebook's kernel holding 30 GiB at 0 %: nothing waits on anything, there is no
    step to profile; after minutes idle-allocated says what it is."""
    sim = Sim()
    holder = replace(TRAINER, gpu_memory=30 * GIB, cpu_percent=0.3, children=0)
    for i in range(330):
        sim.tick([replace(IDLE, mem_used=30 * GIB)], [holder])
        assert "under-used" not in sim.rules(), i
    assert "idle-allocated" in sim.rules()
    # just under the busy share: it reads under it ("49 %", not a rounded "50 %")
    half = Sim()
    half.run(150, lambda i: replace(BUSY, util_gpu=99.4 if i % 2 else 0.0), processes=(holder,))
    (f,) = [f for f in half.findings if f.rule == "under-used"]
    assert f.evidence[0].startswith("busy 49 % of the last")


def test_under_used_is_silent_when_another_rule_explains_it() -> None:
    sim = Sim()
    proc = replace(TRAINER, cpu_percent=99.0, children=0)
    sim.run(150, _bursty, processes=(proc,))
    assert "input-starved" in sim.rules() and "under-used" not in sim.rules()


# -- honest verdicts -----------------------------------------------------------------
def test_gathering_until_the_rules_have_their_history() -> None:
    sim = Sim()
    sim.run(5, BUSY)  # judged at 0 s and 4 s: five readings
    judgement = sim.advisor.judgement
    assert judgement.gathering
    assert judgement.gathering_text() == (
        "still judging: 25 s to go, every rule needs 30 s of readings"
    )
    sim.run(30, BUSY)
    assert not sim.advisor.judgement.gathering and sim.advisor.judgement.complete


def test_a_rule_without_its_reading_is_not_judged() -> None:
    sim = Sim()
    sim.run(20, replace(BUSY, pcie_replay_count=None))
    judgement = sim.advisor.judgement
    assert not judgement.complete
    assert judgement.missing_on(0) == "not judged: pcie-errors: no PCIe replay counter"


def test_mig_mode_keeps_judging_the_parent_gpu_without_utilisation() -> None:
    sim = Sim(devices=(replace(H100, mig_mode=True),))
    mig = replace(BUSY, util_gpu=None, temp_c=90.0, clock_reasons=ce.SW_THERMAL, power_w=600.0)
    sim.run(30, mig)
    f = next(f for f in sim.findings if f.rule == "thermal-throttle")
    assert any("utilisation not readable (MIG mode): load read from power" in e for e in f.evidence)
    missing = sim.advisor.judgement.missing_on(0) or ""
    assert "input-starved: no utilisation (MIG mode)" in missing


def test_point_in_time_reports_a_condition_held_through_a_short_window() -> None:
    sim = Sim()
    sim.run(6, replace(BUSY, pcie_width=8))  # shorter than the live hold of 5 s + judging
    assert "pcie-link-degraded" not in sim.rules()  # the live pane still waits
    sim.advisor.update(sim.history, force=True)  # doctor judges its last reading
    found = sim.advisor.point_in_time()
    (f,) = [f for f in found if f.rule == "pcie-link-degraded"]
    assert any("held through the whole sampled window (5 s" in e for e in f.evidence)
    assert any("over the last 5 s" in e for e in f.evidence)


def test_evidence_says_the_window_actually_sampled() -> None:
    sim = Sim()
    sim.run(13, replace(BUSY, pcie_width=8))  # last judged at 12 s
    f = next(f for f in sim.findings if f.rule == "pcie-link-degraded")
    assert any("over the last 12 s" in e for e in f.evidence), f.evidence
    assert not any("30 s" in e for e in f.evidence)
