"""Where a job's ranks landed, on synthetic histories: ranks crowded on one GPU while the
GPUs given to them sit empty, stray contexts on another rank's GPU; calm on a sweep of
independent runs, on ranks given one GPU only, and on a well-placed job."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.model import GpuSample, ProcessSample
from gputui.core.names import RuleId
from tests.advisor_kit import BUSY, GIB, H100, HOST, IDLE, TRAINER, Sim, torchrun_env

DEVICES = tuple(replace(H100, index=i) for i in range(4))


def rank(i: int, gpu: int, memory: float = 14, env: tuple[str, ...] = ()) -> ProcessSample:
    return replace(
        TRAINER,
        pid=5000 + i,
        gpu_index=gpu,
        gpu_memory=int(memory * GIB),
        env=env or torchrun_env(i, 4),
        ppid=4999,
    )


def tick(sim: Sim, seconds: int, gpus: list[GpuSample], procs: list[ProcessSample]) -> None:
    for _ in range(seconds):
        sim.tick([replace(g, index=i) for i, g in enumerate(gpus)], procs, HOST)


CROWDED = [replace(BUSY, util_gpu=100.0)] + [IDLE] * 3


def test_four_ranks_on_gpu_0_with_three_gpus_empty_are_named() -> None:
    sim = Sim(DEVICES)
    tick(sim, 60, CROWDED, [rank(i, 0) for i in range(4)])
    (f,) = [f for f in sim.findings if f.rule == RuleId.RANKS_CROWDED]
    assert f.gpu == 0 and f.severity == "warning"
    text = " | ".join(f.evidence)
    assert "4 ranks of one job on GPU 0 (rank 0, rank 1, rank 2, rank 3" in text
    assert "GPUs 1-3 visible to them (CUDA_VISIBLE_DEVICES=unset: every GPU)" in text
    assert any("torch.cuda.set_device(int(os.environ['LOCAL_RANK']))" in r for r in f.remedies)


def test_a_launch_settles_before_it_is_called() -> None:
    sim = Sim(DEVICES)
    tick(sim, 20, CROWDED, [rank(i, 0) for i in range(4)])
    assert "ranks-crowded" not in sim.rules()


def test_a_sweep_of_independent_runs_on_one_gpu_is_no_crowded_job() -> None:
    sweep = [
        replace(TRAINER, pid=6000 + i, command=f"python train.py --lr {lr}", env=())
        for i, lr in enumerate(("1e-4", "3e-4", "1e-3", "3e-3"))
    ]
    sim = Sim(DEVICES)
    tick(sim, 90, CROWDED, sweep)
    assert "ranks-crowded" not in sim.rules()


def test_ranks_given_one_gpu_only_share_it_on_purpose() -> None:
    env = [(*torchrun_env(i, 4), "CUDA_VISIBLE_DEVICES=0") for i in range(4)]
    sim = Sim(DEVICES)
    tick(sim, 90, CROWDED, [rank(i, 0, env=env[i]) for i in range(4)])
    assert "ranks-crowded" not in sim.rules()


def test_a_well_placed_job_is_calm() -> None:
    sim = Sim(DEVICES)
    tick(sim, 90, [BUSY] * 4, [rank(i, i) for i in range(4)])
    assert not {"ranks-crowded", "stray-contexts"} & sim.rules()


def test_crowded_ranks_with_the_other_gpus_busy_elsewhere_are_not_this_rule() -> None:
    other = replace(TRAINER, pid=7000, user="bob", env=())
    sim = Sim(DEVICES)
    procs = [rank(i, 0) for i in range(4)] + [replace(other, gpu_index=g) for g in (1, 2, 3)]
    tick(sim, 90, [replace(BUSY, util_gpu=100.0), BUSY, BUSY, BUSY], procs)
    assert "ranks-crowded" not in sim.rules()


def test_ranks_that_also_opened_a_context_on_gpu_0_are_named_there() -> None:
    procs = [rank(i, i, memory=60) for i in range(4)]
    procs += [rank(i, 0, memory=0.85) for i in (1, 2, 3)]  # 870 MiB each (pytorch#49481)
    sim = Sim(DEVICES)
    tick(sim, 60, [BUSY] * 4, procs)
    (f,) = [f for f in sim.findings if f.rule == RuleId.STRAY_CONTEXTS]
    assert f.gpu == 0 and f.severity == "info"
    assert any("rank 1 (pid 5001) 870.4 MiB" in e for e in f.evidence)
    assert any("map_location" in r for r in f.remedies)
    assert "ranks-crowded" not in sim.rules()


def test_stray_contexts_on_a_nearly_full_gpu_are_a_warning() -> None:
    procs = [rank(i, i, memory=60) for i in range(4)]
    procs += [rank(i, 0, memory=1.0) for i in (1, 2, 3)]
    full = replace(BUSY, mem_used=int(76 * GIB))
    sim = Sim(DEVICES)
    tick(sim, 60, [full, BUSY, BUSY, BUSY], procs)
    (f,) = [f for f in sim.findings if f.rule == RuleId.STRAY_CONTEXTS]
    assert f.severity == "warning"


def test_a_process_that_works_on_two_gpus_has_no_stray_context() -> None:
    """Pipeline stages in one process: as much memory on each GPU, by design."""
    procs = [rank(0, 0, memory=30), rank(0, 1, memory=30), rank(1, 2), rank(1, 3)]
    sim = Sim(DEVICES)
    tick(sim, 60, [BUSY] * 4, procs)
    assert "stray-contexts" not in sim.rules()


def test_ranks_in_mig_slices_of_one_gpu_are_placed_on_purpose() -> None:
    devices = (replace(DEVICES[0], mig_mode=True), *DEVICES[1:])
    sim = Sim(devices)
    tick(sim, 90, CROWDED, [rank(i, 0) for i in range(4)])
    assert "ranks-crowded" not in sim.rules()
