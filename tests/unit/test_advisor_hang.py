"""Stuck, not slow, on synthetic histories: a hung collective (its ranks spinning at a
fifth of their power while one rank idles or is gone), a GPU busy without work, and the
healthy shapes that look like them (memory-bound decode, a checkpoint save on one rank, an
epoch's end, a slow rank the others wait for)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from gputui.core.model import Finding, GpuSample, ProcessSample
from gputui.core.names import RuleId
from gputui.exporters.doctor import exit_status
from tests.advisor_kit import BUSY, GIB, H100, HOST, TRAINER, Sim, alarms

GPUS = 4
DEVICES = tuple(replace(H100, index=i) for i in range(GPUS))
#: a rank that trains: 97 % at 560 W of 700, its memory and SMs busy
TRAINING = replace(BUSY, util_mem=45.0, sm_activity=78.0)
#: a rank waiting in NCCL's all-reduce: 100 % at a fifth of its power, nothing else moves
SPINNING = replace(
    BUSY,
    util_gpu=100.0,
    util_mem=0.0,
    sm_activity=12.0,
    power_w=131.0,
    pcie_rx_bps=2e5,
    pcie_tx_bps=1e5,
)
#: a rank whose GPU waits for its host code: nothing runs
IDLING = replace(BUSY, util_gpu=0.0, util_mem=0.0, sm_activity=0.0, power_w=92.0, pcie_rx_bps=1e4)
#: memory-bound decode (vLLM at a small batch): always a kernel, the memory busy, 43 % power
DECODING = replace(
    BUSY, util_gpu=100.0, util_mem=78.0, sm_activity=52.0, power_w=300.0, pcie_rx_bps=3e6
)


def rank_env(rank: int, world: int = GPUS, local: int = GPUS) -> tuple[str, ...]:
    return (
        f"LOCAL_RANK={rank % local}",
        f"LOCAL_WORLD_SIZE={local}",
        "MASTER_ADDR=10.0.0.1",
        "MASTER_PORT=29500",
        f"RANK={rank}",
        f"WORLD_SIZE={world}",
    )


def rank(i: int, cpu: float = 130.0, world: int = GPUS) -> ProcessSample:
    return replace(
        TRAINER,
        pid=4000 + i,
        gpu_index=i,
        gpu_memory=60 * GIB,
        env=rank_env(i, world),
        ppid=3999,
        cpu_percent=cpu,
    )


RANKS = tuple(rank(i) for i in range(GPUS))
Shape = Callable[[int], tuple[Sequence[GpuSample], Sequence[ProcessSample]]]


def on(gpus: Sequence[GpuSample]) -> list[GpuSample]:
    return [replace(g, index=i) for i, g in enumerate(gpus)]


def run(sim: Sim, seconds: int, shape: Shape) -> set[tuple[str, int | None]]:
    """Ticks the shape for ``seconds``; every (rule, GPU) found at warning or above on the
    way (a finding that came and went counts)."""
    seen: set[tuple[str, int | None]] = set()
    for i in range(seconds):
        gpus, procs = shape(i)
        sim.tick(on(gpus), procs, HOST)
        seen |= {(f.rule.value, f.gpu) for f in sim.findings if f.rule in alarms(sim.findings)}
    return seen


def training(_i: int) -> tuple[Sequence[GpuSample], Sequence[ProcessSample]]:
    return [TRAINING] * GPUS, RANKS


def hung(_i: int) -> tuple[Sequence[GpuSample], Sequence[ProcessSample]]:
    """Ranks 0-2 in an all-reduce that rank 3 never joins: its host code is stuck."""
    return [SPINNING] * 3 + [IDLING], (*RANKS[:3], rank(3, cpu=1.5))


def hangs(sim: Sim) -> list[Finding]:
    return [f for f in sim.findings if f.rule == RuleId.COLLECTIVE_HANG]


def watching(sim: Sim, rule: RuleId) -> list[str]:
    return [n.missing for n in sim.advisor.judgement.watching if n.rule == rule]


def test_a_hung_collective_names_the_odd_rank_how_long_and_what_to_run() -> None:
    sim = Sim(DEVICES)
    run(sim, 60, training)
    seen = run(sim, 100, hung)
    assert not hangs(sim) and ("straggler", 3) not in seen  # not yet, and no straggler
    assert watching(sim, RuleId.COLLECTIVE_HANG)  # ... but no all-clear either
    assert not sim.advisor.judgement.complete
    seen |= run(sim, 30, hung)
    found = hangs(sim)
    assert sorted(f.gpu or 0 for f in found) == [0, 1, 2, 3]  # the whole job's time is lost
    f = found[0]
    assert f.severity == "critical"
    assert f.title == "Probable hang: the job's ranks wait in a collective for rank 3"
    assert f.since == 1_000_060.0  # since the spin began, not since the hang was called
    text = " | ".join(f.evidence)
    assert "GPUs 0-2 (rank 0, rank 1, rank 2) at 100 % utilisation for 2 min" in text
    assert "131 W of 700 W" in text and "memory activity 0 %" in text
    assert "GPU 3 (rank 3, pid 4003) idle for 2 min" in text
    remedies = " | ".join(f.remedies)
    assert "py-spy dump --native --pid 4003" in remedies
    assert "NCCL_DEBUG=INFO" in remedies
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1" in remedies
    assert "timeout=timedelta(minutes=10)" in remedies
    assert ("straggler", 3) not in seen  # the honest GPU is not called slow
    assert not [f for f in sim.findings if f.rule in ("straggler", "idle-allocated")]


def test_a_rank_whose_process_is_gone_is_named_by_its_local_rank() -> None:
    sim = Sim(DEVICES)
    run(sim, 40, training)
    run(sim, 130, lambda i: ([SPINNING] * 3 + [IDLING], RANKS[:3]))
    (f, *_) = hangs(sim)
    assert f.severity == "critical" and "LOCAL_RANK 3" in f.title
    text = " | ".join(f.evidence)
    assert "LOCAL_RANK 3 gone: its launcher started 4 ranks here, 3 still hold a GPU" in text
    assert any("dmesg -T | grep -i -e oom -e xid" in r for r in f.remedies)
    assert sorted(f.gpu or 0 for f in hangs(sim)) == [0, 1, 2]


def test_a_checkpoint_save_on_one_rank_is_watched_not_called_a_hang() -> None:
    """Rank 0 writes the checkpoint (its GPU idle, its process at a core) while the others
    wait at a barrier: for minutes, on a big model. Saves end; the job trains again."""
    saving = (rank(0, cpu=100.0), *RANKS[1:])
    sim = Sim(DEVICES)
    run(sim, 40, training)
    seen = run(sim, 240, lambda i: ([IDLING] + [SPINNING] * 3, saving))
    assert not seen  # four minutes of it: no alarm at all
    assert watching(sim, RuleId.COLLECTIVE_HANG)
    seen |= run(sim, 60, training)
    assert not seen and not hangs(sim)


def test_a_save_that_never_ends_is_a_warning_after_the_longer_watch() -> None:
    saving = (rank(0, cpu=100.0), *RANKS[1:])
    sim = Sim(DEVICES)
    run(sim, 20, training)
    run(sim, 310, lambda i: ([IDLING] + [SPINNING] * 3, saving))
    (f, *_) = hangs(sim)
    assert f.severity == "warning"
    assert f.title.startswith("Stalled: the job's ranks wait in a collective while rank 0")
    assert any("its process works on the CPU (100 %)" in e for e in f.evidence)


def test_one_rank_finishing_first_at_an_epoch_end_is_calm() -> None:
    def epoch(i: int) -> tuple[Sequence[GpuSample], Sequence[ProcessSample]]:
        return hung(i) if 30 <= i % 90 < 45 else training(i)  # 15 s of waiting, each epoch

    sim = Sim(DEVICES)
    assert not run(sim, 400, epoch)


def test_memory_bound_decode_is_work_however_full_the_utilisation() -> None:
    sim = Sim(DEVICES)
    seen = run(sim, 400, lambda i: ([DECODING] * GPUS, RANKS))
    assert not seen
    assert not watching(sim, RuleId.COLLECTIVE_HANG)
    assert sim.advisor.judgement.complete


def test_decode_on_one_gpu_alone_is_not_busy_without_work() -> None:
    sim = Sim()
    sim.run(400, DECODING, processes=(replace(TRAINER, command="vllm serve x"),))
    assert "busy-no-work" not in sim.rules()
    assert not watching(sim, RuleId.BUSY_NO_WORK)


def test_the_peers_of_a_slow_rank_wait_in_part_of_every_step_a_straggler_not_a_hang() -> None:
    """Rank 3 throttles to half its clock; ranks 0-2 finish each 3 s step in one second
    and wait in the all-reduce for two. They work every step: no hang, and rank 3 is the
    straggler."""
    slow = replace(TRAINING, sm_clock_mhz=1000)

    def step(i: int) -> tuple[Sequence[GpuSample], Sequence[ProcessSample]]:
        peer = TRAINING if i % 3 == 0 else SPINNING
        return [peer] * 3 + [slow], RANKS

    sim = Sim(DEVICES)
    seen = run(sim, 400, step)
    assert ("straggler", 3) in seen
    assert not [s for s in seen if s[0] == "collective-hang"]
    assert not watching(sim, RuleId.COLLECTIVE_HANG)


def test_ranks_that_have_not_worked_for_minutes_while_one_works_alone_are_stalled() -> None:
    """Rank 0 runs something alone (an evaluation on the GPU, or a loop that never ends)
    while the others wait in the next collective, not a tick of work for five minutes."""
    sim = Sim(DEVICES)
    run(sim, 30, training)
    run(sim, 240, lambda i: ([TRAINING] + [SPINNING] * 3, RANKS))
    assert not hangs(sim) and watching(sim, RuleId.COLLECTIVE_HANG)
    run(sim, 70, lambda i: ([TRAINING] + [SPINNING] * 3, RANKS))
    found = hangs(sim)
    assert sorted(f.gpu or 0 for f in found) == [1, 2, 3]  # the working rank lost nothing
    f = found[0]
    assert f.severity == "warning"
    assert f.title == "Stalled: the job's ranks wait in a collective while rank 0 works alone"
    assert any("GPU 0 (rank 0) works alone (97 % utilisation, 560 W)" in e for e in f.evidence)
    assert any("py-spy dump --native --pid 4000" in r for r in f.remedies)


def test_every_rank_here_waiting_for_another_node_is_a_warning_after_the_longer_watch() -> None:
    ranks = tuple(rank(i, world=16) for i in range(GPUS))
    sim = Sim(DEVICES)
    run(sim, 200, lambda i: ([SPINNING] * GPUS, ranks))
    assert not hangs(sim) and watching(sim, RuleId.COLLECTIVE_HANG)
    run(sim, 110, lambda i: ([SPINNING] * GPUS, ranks))
    (f, *_) = hangs(sim)
    assert f.severity == "warning"
    assert f.title == "Probable hang: every rank of the job here waits in a collective"
    assert any("4 here of WORLD_SIZE=16" in e for e in f.evidence)


def test_one_missing_reading_does_not_hide_a_hang() -> None:
    """Without memory activity (a remote exporter that lacks it) power and SM activity
    still tell; a tick without power does not break the run."""

    def shape(i: int) -> tuple[Sequence[GpuSample], Sequence[ProcessSample]]:
        spin = replace(SPINNING, util_mem=None, power_w=None if i % 7 == 0 else 131.0)
        return [spin] * 3 + [IDLING], (*RANKS[:3], rank(3, cpu=1.5))

    sim = Sim(DEVICES)
    run(sim, 140, shape)
    assert len(hangs(sim)) == 4


def test_power_alone_does_not_call_a_gpu_idle_of_work() -> None:
    """Only the power read (no memory or SM activity): one witness is not enough."""
    bare = replace(SPINNING, util_mem=None, sm_activity=None)
    sim = Sim(DEVICES)
    run(sim, 200, lambda i: ([bare] * 3 + [IDLING], (*RANKS[:3], rank(3, cpu=1.5))))
    assert not hangs(sim)


def test_a_lone_gpu_busy_without_work_for_minutes_is_a_warning() -> None:
    sim = Sim()
    sim.run(200, SPINNING, processes=())
    assert "busy-no-work" not in sim.rules()
    assert watching(sim, RuleId.BUSY_NO_WORK)
    sim.run(110, SPINNING, processes=())
    (f,) = [f for f in sim.findings if f.rule == "busy-no-work"]
    assert f.severity == "warning"
    assert any("no process is listed on it" in e for e in f.evidence)
    assert any("nvidia-smi -r -i 0" in r for r in f.remedies)
    assert any("100 % utilisation for 5 min" in e for e in f.evidence)


def test_doctor_on_a_short_run_of_a_hang_says_watching_and_exits_4() -> None:
    sim = Sim(DEVICES)
    run(sim, 40, hung)
    findings = sim.advisor.point_in_time()
    judgement = sim.advisor.judgement
    assert not [f for f in findings if f.rule == "collective-hang"]
    assert exit_status(findings, judgement) == 4
    (line, *_) = watching(sim, RuleId.COLLECTIVE_HANG)
    assert "a hang is called after 2 min 00 s" in line


def test_an_idle_job_is_no_hang() -> None:
    sim = Sim(DEVICES)
    seen = run(sim, 400, lambda i: ([IDLING] * GPUS, RANKS))
    assert not [s for s in seen if s[0] in ("collective-hang", "busy-no-work")]
    assert not watching(sim, RuleId.COLLECTIVE_HANG)


def test_the_catalogue_remedies_name_what_to_run() -> None:
    from gputui.advisor.hang import RULES

    prose = " ".join(r.suggests for r in RULES)
    for command in ("py-spy dump", "NCCL_DEBUG=INFO", "TORCH_NCCL_TRACE_BUFFER_SIZE"):
        assert command in prose


def test_a_hang_on_small_inference_boards_is_judged_against_their_own_limit() -> None:
    """An L4 (72 W): waiting at P0 it draws 31 W, 43 % of its limit; training, 45 W with
    its memory busy. The ranks' own limit and their memory activity tell them apart."""
    l4 = tuple(
        replace(H100, index=i, name="NVIDIA L4", power_limit_w=72.0, power_default_limit_w=72.0)
        for i in range(2)
    )
    spin = replace(SPINNING, power_w=31.0, power_limit_w=72.0, sm_activity=None)
    idle = replace(IDLING, power_w=16.0, power_limit_w=72.0)
    train = replace(TRAINING, power_w=45.0, power_limit_w=72.0, sm_activity=None)
    ranks = tuple(rank(i, world=2) for i in range(2))
    stuck = (ranks[0], rank(1, cpu=1.0, world=2))
    sim = Sim(l4)
    assert not run(sim, 150, lambda i: ([train, train], ranks))
    run(sim, 130, lambda i: ([spin, idle], stuck))
    assert sorted(f.gpu or 0 for f in hangs(sim)) == [0, 1]


def test_a_rank_whose_gpu_was_lost_is_the_one_the_others_wait_for() -> None:
    sim = Sim(DEVICES)
    run(sim, 40, training)
    for _ in range(130):
        gpus = [replace(SPINNING, index=i) for i in range(3)] + [GpuSample(index=3, lost=True)]
        sim.tick(gpus, RANKS, HOST)
    (f, *_) = hangs(sim)
    assert f.severity == "critical" and f.title.endswith("for rank 3")
    assert any("GPU 3 (rank 3) lost: no reading for 2 min" in e for e in f.evidence)


def test_missing_utilisation_readings_now_do_not_end_a_hang() -> None:
    sim = Sim(DEVICES)
    run(sim, 130, hung)
    assert len(hangs(sim)) == 4
    before = sim.now
    unread = replace(SPINNING, util_gpu=None)
    run(sim, 5, lambda i: ([unread] * 3 + [IDLING], hung(i)[1]))  # a judgement among them
    assert all(f.updated >= before for f in hangs(sim))  # still seen, not merely held on


def test_an_mpi_jobs_missing_rank_is_named_by_its_local_rank() -> None:
    def mpi(i: int) -> ProcessSample:
        env = (
            f"OMPI_COMM_WORLD_RANK={i}",
            "OMPI_COMM_WORLD_SIZE=4",
            f"OMPI_COMM_WORLD_LOCAL_RANK={i}",
            "OMPI_COMM_WORLD_LOCAL_SIZE=4",
        )
        return replace(rank(i), env=env, ppid=3990)

    sim = Sim(DEVICES)
    left = (mpi(0), mpi(1), mpi(3))  # rank 2 died
    run(sim, 130, lambda i: ([SPINNING, SPINNING, IDLING, SPINNING], left))
    (f, *_) = hangs(sim)
    assert f.title.endswith("for LOCAL_RANK 2")
    assert sorted(g.gpu or 0 for g in hangs(sim)) == [0, 1, 3]
