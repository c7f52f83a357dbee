"""Verdicts only over what was watched, and causes only from the job's own evidence: a
short run on a slow leak is "watching", never a complete all-clear (doctor exits 4); a
host kept busy by other work does not make an idle job "input-starved"."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor import make_monitor
from gputui.core.config import Config
from gputui.core.model import Frame, GpuSample, SourceInfo
from gputui.core.names import RuleId, SourceKind
from gputui.exporters.doctor import exit_status, report_lines
from tests.advisor_kit import BUSY, GIB, H100, HOST, TRAINER, Sim


def leaking(i: int) -> GpuSample:
    """A leak growing 3.4 GiB a minute from 57 GiB of 80: six minutes from out-of-memory
    40 s in."""
    return replace(BUSY, mem_used=int((57 + 3.4 * i / 60) * GIB))


def test_a_short_run_on_a_slow_leak_is_watching_and_exits_4() -> None:
    sim = Sim()
    sim.run(40, leaking)
    findings = sim.advisor.point_in_time()
    judgement = sim.advisor.judgement
    assert "vram-pressure" not in {f.rule for f in findings}
    assert not judgement.complete and not judgement.gathering and not judgement.not_judged
    (watched,) = [n for n in judgement.watching if n.rule == RuleId.VRAM_PRESSURE]
    assert "growing toward full" in watched.missing and "called after 1 min 00 s" in watched.missing
    assert "growing 3.4 GiB/min" in watched.missing
    assert exit_status(findings, judgement) == 4


def test_the_same_leak_watched_long_enough_is_called() -> None:
    sim = Sim()
    sim.run(130, leaking)
    (f,) = [f for f in sim.advisor.point_in_time() if f.rule == "vram-pressure"]
    assert any("growing 3.4 GiB/min" in e and "full in about 4 min" in e for e in f.evidence)
    assert not [n for n in sim.advisor.judgement.watching if n.rule == RuleId.VRAM_PRESSURE]


def test_doctor_says_which_verdicts_it_is_watching_for() -> None:
    source = SourceInfo("REPLAY", SourceKind.REPLAY)
    monitor = make_monitor((H100,), Config(), source)
    for i in range(40):
        monitor.ingest(Frame(time=1000.0 + i, gpus=(leaking(i),), host=HOST, processes=(TRAINER,)))
    monitor.judge_latest()
    text = " ".join(line.plain for line in report_lines(monitor, width=200))
    assert "verdict: nothing found so far, but 1 verdict(s) need a longer watch than the" in text
    assert "(exit 4)" in text
    assert "watching (GPU 0): vram-pressure: GPU memory growing toward full" in text


def test_a_gpu_below_half_busy_for_less_than_the_under_used_window_is_no_all_clear() -> None:
    quiet = replace(TRAINER, cpu_percent=40.0)
    samples = (100.0, 0.0, 0.0, 100.0, 0.0, 0.0)
    sim = Sim()
    sim.run(40, replace(BUSY, util_gpu=34.0, util_samples=samples), processes=(quiet,))
    findings = sim.advisor.point_in_time()
    assert [n.rule for n in sim.advisor.judgement.watching] == ["under-used"]
    assert exit_status(findings, sim.advisor.judgement) == 4


def test_a_healthy_run_as_long_as_every_window_it_needs_is_a_complete_all_clear() -> None:
    sim = Sim()
    sim.run(40, replace(BUSY, mem_used=60 * GIB))
    findings = sim.advisor.point_in_time()
    assert not sim.advisor.judgement.watching
    assert exit_status(findings, sim.advisor.judgement) == 0


# -- starvation only with the job's own evidence ------------------------------------
FULL_HOST = replace(HOST, cpu_percent=99.0, run_queue=140)  # 64 cores, other work on them


def _requests(i: int) -> GpuSample:
    """An inference server with request gaps: busy in bursts, idle between them."""
    return replace(BUSY, util_gpu=(85.0, 70.0, 4.0, 2.0, 60.0, 3.0)[i % 6])


def test_host_load_alone_does_not_make_an_idle_job_input_starved() -> None:
    server = replace(TRAINER, cpu_percent=14.0, children=0, command="python serve.py")
    sim = Sim()
    sim.run(180, _requests, processes=(server,), host=FULL_HOST)
    assert "input-starved" not in sim.rules()
    # after minutes, the GPU's waiting is told, with the host's load as context only
    (f,) = [f for f in sim.findings if f.rule == "under-used"]
    assert f.severity == "info" and any("host CPU 99 %" in e for e in f.evidence)


def test_host_load_with_the_jobs_own_loaders_at_work_is_starvation() -> None:
    loading = replace(TRAINER, cpu_percent=40.0, children=4, workers_cpu_percent=140.0)
    sim = Sim()
    sim.run(40, _requests, processes=(loading,), host=FULL_HOST)
    (f,) = [f for f in sim.findings if f.rule == "input-starved"]
    assert "host's CPUs are all taken" in f.title
    assert any("4 data-loader worker(s) working at 35 % of a core each" in e for e in f.evidence)


def test_a_main_process_loading_alone_on_a_full_host_is_starvation() -> None:
    alone = replace(TRAINER, cpu_percent=70.0, children=0)
    sim = Sim()
    sim.run(40, _requests, processes=(alone,), host=FULL_HOST)
    assert "input-starved" in sim.rules()
