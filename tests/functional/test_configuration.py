"""The configuration checks under real conditions: a cgroup with a CPU quota and a busy
process in it (v1 or v2, whichever this host has), a private mount namespace with a 64 MB
/dev/shm and workers, a process with the environment variables; and `gputui doctor
--config` end to end over the fake driver.

The first two need root and a kernel that lets it make cgroups and mount namespaces: they
skip with the reason elsewhere, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gputui.advisor.config_check import check_once
from gputui.cli import main
from gputui.core.config import Thresholds
from gputui.core.model import Frame, HostSettings, ProcessSample
from gputui.exporters.doctor import config_report_lines
from gputui.sources.host import GpuProcess, HostReader
from gputui.sources.settings import JOB_PERIOD_S, SettingsReader
from tests.advisor_kit import BUSY, H100, HOST
from tests.nvml_double import FakeProcess, driver, hgx, install

CGROUP = Path("/sys/fs/cgroup")
MIB = 1 << 20


def _cannot(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI runs as root and must be able to: {reason}")
    pytest.skip(reason)


class Clock:
    """A monotonic clock the test moves past the reader's periods."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _joined(pids: list[int]) -> tuple[HostReader, tuple[ProcessSample, ...]]:
    """The processes as the live source joins them: psutil and /proc, as on GPU 0."""
    host = HostReader(device_check=lambda pid: True)
    out, _notes = host.join_processes(GpuProcess(pid, 0, 1 << 30, "compute") for pid in pids)
    return host, out


def _stop(*pids: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# -- a cgroup with a CPU quota and a busy process in it ------------------------------------
@contextlib.contextmanager
def quota_cgroup(quota_us: int, period_us: int = 100_000) -> Iterator[Path]:
    """A new cgroup with a CPU quota, on v2 or on v1's cpu hierarchy; removed afterwards."""
    if os.geteuid() != 0:
        _cannot("make a cgroup with a CPU quota (needs root)")
    name = f"gputui-test-{os.getpid()}"
    if (CGROUP / "cgroup.controllers").exists():
        if "cpu" not in (CGROUP / "cgroup.subtree_control").read_text().split():
            try:
                (CGROUP / "cgroup.subtree_control").write_text("+cpu")
            except OSError as exc:
                _cannot(f"enable the cpu controller in {CGROUP} ({exc.strerror})")
        folder = CGROUP / name
        write = [("cpu.max", f"{quota_us} {period_us}")]
    elif (CGROUP / "cpu" / "cpu.cfs_quota_us").exists():
        folder = CGROUP / "cpu" / name
        write = [("cpu.cfs_period_us", str(period_us)), ("cpu.cfs_quota_us", str(quota_us))]
    else:
        _cannot("find a cgroup hierarchy with the cpu controller")
    try:
        folder.mkdir()
        for file, value in write:
            (folder / file).write_text(value)
    except OSError as exc:
        _cannot(f"make {folder} with a quota ({exc.strerror})")
    try:
        yield folder
    finally:
        for _ in range(50):  # the killed process leaves the cgroup a moment later
            try:
                folder.rmdir()
                break
            except OSError:
                time.sleep(0.05)


def test_a_throttled_cgroup_is_read_and_judged_live() -> None:
    with quota_cgroup(20_000) as folder:  # a fifth of a core
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            (folder / "cgroup.procs").write_text(str(busy.pid))
            time.sleep(1.5)  # about 15 periods, each throttled
            host, procs = _joined([busy.pid])
            clock = Clock()
            reader = SettingsReader(clock=clock)
            jobs, settings = reader.read(procs, host.workers_of)
            job = jobs[0]
            assert job.pids == (busy.pid,) and job.cgroup is not None
            assert job.cgroup.endswith(folder.name)
            assert (job.cpu_quota_us, job.cpu_period_us) == (20_000, 100_000)
            assert job.cpu_periods is not None and job.cpu_periods >= 10
            assert (job.cpu_throttled_periods or 0) / job.cpu_periods > 0.5
            assert job.window_periods is None  # one reading: no window yet
            time.sleep(1.0)
            clock.now += (
                JOB_PERIOD_S + 1.0
            )  # past the reader's period: read again, the window opens
            jobs, settings = reader.read(procs, host.workers_of)
            job = jobs[0]
            assert job.window_periods is not None and job.window_periods >= 8
            assert (job.window_throttled or 0) / job.window_periods > 0.5
        finally:
            _stop(busy.pid)
            busy.wait()
    frame = Frame(time.time(), (BUSY,), HOST, procs, jobs=jobs, settings=settings)
    verdict = check_once((H100,), frame, Thresholds(cpu_throttled_min_periods=5))
    finding = next(f for f in verdict.findings if f.rule == "cpu-throttled")
    assert finding.gpu == 0 and finding.severity == "warning"
    assert "CPU quota 0.2 cores" in finding.evidence[0]
    assert f"scheduler periods over the last {JOB_PERIOD_S + 1:.0f} s" in finding.evidence[1]


# -- a private mount namespace with a 64 MB /dev/shm and two workers ----------------------
@contextlib.contextmanager
def small_shm_job() -> Iterator[int]:
    """A process in its own mount namespace with a 64 MB /dev/shm, with two children."""
    if os.geteuid() != 0:
        _cannot("make a mount namespace with its own /dev/shm (needs root)")
    script = (
        "mount -t tmpfs -o size=64m tmpfs /dev/shm || exit 1; sleep 60 & sleep 60 & exec sleep 60"
    )
    try:
        job = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError:
        _cannot("run unshare (util-linux)")
    try:
        for _ in range(100):
            mounted = "size=65536k" in Path(f"/proc/{job.pid}/mountinfo").read_text()
            children = Path(f"/proc/{job.pid}/task/{job.pid}/children").read_text().split()
            if (mounted and len(children) == 2) or job.poll() is not None:
                break
            time.sleep(0.05)
        if job.poll() is not None:
            _cannot(f"mount a tmpfs in a new mount namespace ({job.stderr.read().decode()!r})")  # type: ignore[union-attr]
        yield job.pid
    finally:
        kids = Path(f"/proc/{job.pid}/task/{job.pid}/children")
        _stop(*(int(p) for p in (kids.read_text().split() if kids.exists() else ())), job.pid)
        job.wait()


def test_a_64_mb_dev_shm_in_the_jobs_namespace() -> None:
    with small_shm_job() as pid:
        host, procs = _joined([pid])
        reader = SettingsReader(clock=Clock())
        jobs, settings = reader.read(procs, host.workers_of)
        job = jobs[0]
        assert job.shm_size == 64 * MIB and job.shm_mount == "tmpfs size=65536k"
        assert job.workers == 2 and job.shm_used is not None and job.shm_used < MIB
        assert job.threads == 3  # the job's process and its two workers, one thread each
        frame = Frame(time.time(), (BUSY,), HOST, procs, jobs=jobs, settings=settings)
        finding = next(f for f in check_once((H100,), frame).findings if f.rule == "shm-small")
        assert finding.severity == "warning" and "2 data-loader workers" in finding.evidence[1]
        assert "64.0 MiB (tmpfs size=65536k)" in finding.evidence[0]
        # the host's own /dev/shm is not the job's
        assert Path("/dev/shm").stat().st_dev != Path(f"/proc/{pid}/root/dev/shm").stat().st_dev
        (Path(f"/proc/{pid}/root/dev/shm") / "batch").write_bytes(b"\0" * (56 * MIB))
        jobs, settings = SettingsReader(clock=Clock()).read(procs, host.workers_of)
        frame = Frame(time.time(), (BUSY,), HOST, procs, jobs=jobs, settings=settings)
        finding = next(f for f in check_once((H100,), frame).findings if f.rule == "shm-small")
        assert finding.title.startswith("Shared memory (/dev/shm) nearly full")
        assert "88 % used" in finding.evidence[1]


def _as_nobody(read: Callable[[], dict[str, object]]) -> dict[str, object]:
    """``read()`` in a child process that dropped root for the user nobody: what a user
    without permission on another user's job sees."""
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        _cannot("find the user nobody to read without permission")
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child's coverage is not collected)
        code = 0
        try:
            os.close(rfd)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            os.write(wfd, json.dumps(read()).encode())
        except BaseException as exc:  # the parent reports it
            os.write(wfd, json.dumps({"error": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(child, 0)
    found: dict[str, object] = json.loads(answer)
    assert "error" not in found, found["error"]
    return found


def test_another_users_job_read_without_permission_says_what_it_could_not_read() -> None:
    """Not root: the job's mountinfo (world-readable) still gives the 64 MB size, but its
    use and its open files need permission on the process; said, never guessed."""
    with small_shm_job() as pid:
        host, procs = _joined([pid])
        workers = {pid: host.workers_of(pid)}  # read as root: the children list is not

        def read() -> dict[str, object]:
            jobs, settings = SettingsReader(clock=Clock()).read(procs, workers.__getitem__)
            frame = Frame(time.time(), (BUSY,), HOST, procs, jobs=jobs, settings=settings)
            verdict = check_once((H100,), frame)
            job = jobs[0]
            return {
                "shm": [job.shm_size, job.shm_used],
                "unreadable": list(job.unreadable),
                "findings": [[f.rule, f.severity.value] for f in verdict.findings],
                "states": {c.rule.value: c.state for c in verdict.checks},
            }

        found = _as_nobody(read)
    assert found["shm"] == [64 * MIB, None]
    unreadable, findings, states = found["unreadable"], found["findings"], found["states"]
    assert isinstance(unreadable, list) and isinstance(findings, list)
    assert any(u.startswith("shm: ") and "Permission denied" in u for u in unreadable)
    assert ["shm-small", "warning"] in findings  # its size alone says enough
    assert isinstance(states, dict) and states["shm-small"] == "warning"
    assert states["open-files"] == "not judged"  # the limit is readable, the files are not


# -- a process with the environment variables ---------------------------------------------
TWO = tuple(
    replace(
        H100,
        index=i,
        pci_bus_id=f"00000000:{'182A'[2 * i : 2 * i + 2]}:00.0",
        pcie_topology=("X", "PIX") if i == 0 else ("PIX", "X"),
        p2p_read=("X", "OK") if i == 0 else ("OK", "X"),
        p2p_write=("X", "OK") if i == 0 else ("OK", "X"),
    )
    for i in (0, 1)
)


def test_a_process_with_costly_environment_variables() -> None:
    env = {
        **os.environ,
        "PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
        "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
        "NCCL_P2P_DISABLE": "1",
        "NCCL_IB_DISABLE": "1",
        "CUDA_LAUNCH_BLOCKING": "1",
        "WANDB_API_KEY": "hunter2-secret",
    }
    env.pop("OMP_NUM_THREADS", None)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        time.sleep(0.2)
        host = HostReader(device_check=lambda pid: True)
        out, _notes = host.join_processes(
            GpuProcess(proc.pid, gpu, 1 << 30, "compute") for gpu in (0, 1)
        )
    finally:
        _stop(proc.pid)
        proc.wait()
    assert "NCCL_P2P_DISABLE=1" in out[0].env
    assert not any("hunter2" in e or "WANDB" in e for e in out[0].env)  # never read
    ib = HostSettings(ib_ports=("mlx5_0/1 InfiniBand",))
    frame = Frame(time.time(), (BUSY, replace(BUSY, index=1)), HOST, out, settings=ib)
    verdict = check_once(TWO, frame)
    rules = {f.rule for f in verdict.findings}
    assert {"no-cuda-caching", "distributed-debug", "nccl-p2p-off", "nccl-ib-off"} <= rules
    assert "cuda-launch-blocking" in rules
    assert {f.gpu for f in verdict.findings if f.rule == "nccl-p2p-off"} == {0, 1}
    text = "\n".join(line.plain for line in config_report_lines("NVML", TWO, frame, verdict, 0.1))
    assert "hunter2" not in text and "NCCL_P2P_DISABLE=1" in text


# -- gputui doctor --config end to end ----------------------------------------------------
def _node(monkeypatch: pytest.MonkeyPatch, **changes: object) -> None:
    gpus = hgx(2)
    for name, value in changes.items():
        setattr(gpus[0], name, value)
    install(monkeypatch, driver(550, gpus))
    for name in ("NCCL_P2P_DISABLE", "CUDA_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)


def test_doctor_config_on_a_healthy_node_exits_0_and_lists_its_checks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _node(monkeypatch)
    monkeypatch.setenv("COLUMNS", "100")
    started = time.monotonic()
    assert main(["doctor", "--config"]) == 0
    took = time.monotonic() - started
    out = capsys.readouterr().out
    assert "verdict: nothing in this node's or job's configuration slows training" in out
    assert "configuration: 23 checks" in out
    for rule in ("cpu-throttled", "shm-small", "nccl-p2p-off", "p2p-unavailable", "cpu-governor"):
        assert f"ok  {rule}" in out or f"  {rule}" in out
    assert "gputui's own job" in out and "/dev/shm" in out and "GPU 1: compute mode" in out
    assert took < 30  # no sampling window (the figure itself: benchmarks/doctor_config.py)


def test_doctor_config_json_and_its_exit_codes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _node(monkeypatch, p0_range=(345, 1410), mig_pending=1)
    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    assert main(["doctor", "--config", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["exit_status"] == 1
    found = {(f["rule"], f["gpu"]) for f in document["findings"]}
    assert {("clocks-locked", 0), ("mode-pending", 0), ("nccl-p2p-off", None)} <= found
    checks = {c["rule"]: c["state"] for c in document["configuration"]["checks"]}
    assert checks["clocks-locked"] == "warning" and checks["shm-small"] == "ok"
    assert document["configuration"]["elapsed_s"] >= 0
    assert document["latest"]["jobs"][0]["own"] is True
    assert document["latest"]["settings"] is not None


def test_doctor_config_with_the_workers_to_come(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--workers: a job script says how many loaders it will start; a cpuset of this
    machine's CPUs is smaller than that."""
    _node(monkeypatch)
    workers = 100_000  # more than any machine's CPUs
    assert main(["doctor", "--config", "--workers", str(workers), "--json"]) in (0, 1)
    document = json.loads(capsys.readouterr().out)
    states = {c["rule"]: c["state"] for c in document["configuration"]["checks"]}
    assert states["cpuset-small"] == "info"
    assert document["latest"]["jobs"][0]["workers"] == workers


def test_doctor_config_on_the_demo_says_it_reads_no_configuration(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["doctor", "--config", "--demo", "healthy", "--gpus", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "does not read the node's or the jobs' settings" in out
    assert "not read shm-small" in out and "ok shm-small" not in out  # no all-clear
    assert "nothing in this node's or job's configuration slows training" not in out


def test_full_doctor_has_a_configuration_section(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _node(monkeypatch)
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    assert main(["doctor", "--duration", "6", "--interval", "1", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert any(f["rule"] == "cuda-launch-blocking" for f in document["findings"])
    states = {c["rule"]: c["state"] for c in document["configuration"]["checks"]}
    assert states["cuda-launch-blocking"] == "warning" and states["shm-small"] == "ok"


def test_no_gpu_is_exit_3_for_the_config_check_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, None)
    assert main(["doctor", "--config", "--json"]) == 3
    assert "No NVIDIA driver" in json.loads(capsys.readouterr().out)["error"]


def test_doctor_config_reads_its_own_environment_while_a_job_holds_a_gpu(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A job script's pre-flight on a node where another job already runs, in gputui's own
    cgroup and mount namespace (a real child of this test, on GPU 0): gputui's own
    environment and --workers are still judged (issue 50: "ok", exit 0, --workers ignored,
    while any GPU job ran)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("CUDA_LAUNCH_BLOCKING",)}
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=clean)
    try:
        gpus = hgx(2)
        gpus[0].processes = [FakeProcess(job.pid, 4000 * MIB)]
        gpus[1].processes = []
        install(monkeypatch, driver(550, gpus))

        class SeesTheJob(HostReader):  # a GPU process holds /dev/nvidia*, absent here
            def __init__(self, keep_files: bool = False) -> None:
                super().__init__(device_check=lambda pid: pid == job.pid, keep_files=keep_files)

        monkeypatch.setattr("gputui.sources.host.HostReader", SeesTheJob)
        monkeypatch.delenv("NCCL_P2P_DISABLE", raising=False)
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
        status = main(["doctor", "--config", "--workers", "16", "--json"])
    finally:
        _stop(job.pid)
        job.wait()
    document = json.loads(capsys.readouterr().out)
    jobs = document["latest"]["jobs"]
    assert any(job.pid in j["pids"] for j in jobs)  # the running job, read as ever
    own = [j for j in jobs if j["own"]]
    assert len(own) == 1 and own[0]["workers"] == 16
    found = {(f["rule"], f["gpu"]) for f in document["findings"]}
    assert ("cuda-launch-blocking", None) in found
    assert status == document["exit_status"] >= 1


def test_a_dev_shm_that_never_answers_leaves_doctor_config_a_line_not_a_hang(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 52: a /dev/shm on a filesystem that never answers (a FUSE mount the job made)
    hung `doctor --config` and `record` in statvfs, beyond SIGKILL. The call runs off
    the caller's thread with a deadline: doctor ends, and says what did not answer."""
    _node(monkeypatch)
    release = threading.Event()
    real = os.statvfs

    def never_answers(path: Any) -> os.statvfs_result:
        if str(path).endswith("dev/shm"):
            release.wait(60)
        return real(path)

    monkeypatch.setattr(os, "statvfs", never_answers)
    status: list[int] = []
    doctor = threading.Thread(target=lambda: status.append(main(["doctor", "--config"])))
    try:
        started = time.monotonic()
        doctor.start()
        doctor.join(20)
        assert not doctor.is_alive(), "doctor --config hung on statvfs"
        assert time.monotonic() - started < 20 and status
        out = capsys.readouterr().out
        assert "dev/shm: its filesystem gives no answer within 0.5 s" in out, out
    finally:
        release.set()
        doctor.join(5)
