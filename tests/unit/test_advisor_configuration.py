"""The configuration rules on synthetic frames: the job's cgroup, shared memory and limits,
its environment, the node's and the GPUs' settings; through the engine (hysteresis) and
once (doctor --config); what they never claim, and what they say they could not judge."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor.config_check import (
    DEVICE_FACTS,
    NOT_READ,
    OK,
    check_once,
    configuration_rules,
)
from gputui.core.config import Thresholds
from gputui.core.model import (
    DeviceInfo,
    DeviceWaiter,
    Finding,
    Frame,
    GpuSample,
    HostSettings,
    JobSettings,
    Note,
    ProcessSample,
)
from gputui.core.names import PROCESS_ONLY, SETTINGS_ONLY, NoteKind, RuleId
from gputui.exporters.doctor import config_verdict
from tests.advisor_kit import BUSY, H100, HOST, TRAINER, Sim

GIB = 1 << 30
MIB = 1 << 20
SETTINGS = HostSettings(
    governor="performance",
    governor_cpus=64,
    cpufreq_cpus=64,
    cpufreq_driver="intel_pstate",
    thp_enabled="madvise",
    thp_defrag="madvise",
    numa_balancing=False,
    numa_nodes=2,
    ib_ports=(),
)
#: a healthy job: no quota, no memory limit, room in /dev/shm, few files open
JOB = JobSettings(
    pids=(4242,),
    cgroup="/kubepods.slice/pod1.slice/cri-1.scope",
    cgroup_version=2,
    cpu_quota_us=-1,
    cpu_period_us=100000,
    cpu_periods=0,
    cpu_throttled_periods=0,
    memory_limit=-1,
    memory_used=8 * GIB,
    memory_anon=6 * GIB,
    memory_oom_kills=0,
    cpuset="0-63",
    shm_size=64 * GIB,
    shm_used=1 * GIB,
    shm_mount="tmpfs size=67108864k",
    workers=8,
    threads=80,
    nofile_limit=1048576,
    open_files=300,
    swapped=0,
)
LOADER = replace(TRAINER, workers_active=8, workers_cpu_percent=760.0, cpu_percent=100.0)
#: an H100 as NVML describes it locally: its modes read (a remote exporter's page has none)
NODE_H100 = replace(H100, compute_mode="Default", mig_pending=False, ecc_pending=False)


def once(
    job: JobSettings | None = JOB,
    settings: HostSettings | None = SETTINGS,
    processes: tuple[ProcessSample, ...] = (LOADER,),
    devices: tuple[DeviceInfo, ...] = (NODE_H100,),
    gpus: tuple[GpuSample, ...] = (BUSY,),
) -> tuple[tuple[Finding, ...], dict[str, str]]:
    """doctor --config over one frame: the findings, and each check's state by rule."""
    frame = Frame(
        time=1_000_000.0,
        gpus=gpus,
        host=HOST,
        processes=processes,
        jobs=(job,) if job is not None else (),
        settings=settings,
    )
    verdict = check_once(devices, frame)
    return verdict.findings, {str(c.rule): c.state for c in verdict.checks}


def only(findings: tuple[Finding, ...], rule: str) -> Finding:
    found = [f for f in findings if f.rule == rule]
    assert found, f"no {rule} in {[f.rule for f in findings]}"
    return found[0]


def test_a_healthy_job_on_a_healthy_node_passes_every_check() -> None:
    findings, states = once()
    assert findings == ()
    assert set(states.values()) == {OK}
    assert set(states) == {str(r.id) for r in configuration_rules()}


def test_a_source_without_settings_leaves_their_checks_not_read_not_ok() -> None:
    """A simulated, remote or recorded source reads no cgroup, /dev/shm or host files: the
    checks of them found nothing because they were given nothing, which is no "ok"; the
    checks of what it does report (GPU facts, the processes' environments) still run."""
    findings, states = once(job=None, settings=None)
    assert findings == ()
    unread = {r for r, state in states.items() if state == NOT_READ}
    assert unread == {str(r) for r in SETTINGS_ONLY}
    assert {states[r] for r in set(states) - unread} == {OK}
    bare = check_once((NODE_H100,), _bare_frame())
    verdict = config_verdict(bare.findings, bare.judgement, bare.checks).plain
    total = len(configuration_rules())
    assert f"{total - len(SETTINGS_ONLY)} of {total} checks; {len(SETTINGS_ONLY)} not read" in (
        verdict
    )
    # a job's settings alone (doctor in a container that hides the host's files) are read
    assert NOT_READ not in once(settings=None)[1].values()


def test_a_remote_page_leaves_the_environment_and_mode_checks_not_read() -> None:
    """A remote exporter or a Prometheus server carries no processes (its frames say the
    rules that need them are blind) and no GPU modes: CUDA_LAUNCH_BLOCKING, the CUDA
    runtime, compute and pending modes were given nothing, which is no "ok" either. The
    board facts it does carry (the power limit) are still checked."""
    blind = Note(NoteKind.RULES_BLIND, "remote source: no process or host readings")
    frame = Frame(time=1_000_000.0, gpus=(BUSY,), notes=(blind,))
    states = {str(c.rule): c.state for c in check_once((H100,), frame).checks}
    unread = {r for r, state in states.items() if state == NOT_READ}
    expected = SETTINGS_ONLY | PROCESS_ONLY | set(DEVICE_FACTS)
    assert unread == {str(r) for r in expected}
    assert states[str(RuleId.POWER_LIMIT_LOWERED)] == OK
    # the same frame from a source that reads processes: their checks run (and pass)
    local = check_once((NODE_H100,), replace(frame, notes=(), processes=(LOADER,)))
    assert not {str(c.rule) for c in local.checks if c.state == NOT_READ} & {
        str(r) for r in PROCESS_ONLY | set(DEVICE_FACTS)
    }


def _bare_frame() -> Frame:
    return Frame(time=1_000_000.0, gpus=(BUSY,), host=HOST, processes=(LOADER,))


# -- the job's cgroup ---------------------------------------------------------------------
THROTTLED = replace(
    JOB,
    cpu_quota_us=200000,
    window_s=30.0,
    window_periods=300,
    window_throttled=186,
    window_cpu_s=59.4,
    cpu_throttled_s=412.0,
)


def test_cpu_quota_throttling_through_the_engine_with_hysteresis() -> None:
    sim = Sim()
    sim.run(3, BUSY, processes=(LOADER,))
    for _ in range(3):
        sim.tick([BUSY], (LOADER,), jobs=(THROTTLED,), settings=SETTINGS)
    assert "cpu-throttled" not in sim.rules()  # not yet held start_after_s
    # first seen by the judgement at 4 s, held start_after_s (5 s) by the one at 12 s
    for _ in range(7):
        sim.tick([BUSY], (LOADER,), jobs=(THROTTLED,), settings=SETTINGS)
    finding = only(sim.findings, "cpu-throttled")
    assert finding.gpu == 0 and finding.severity == "warning"
    text = " ".join(finding.evidence)
    assert "CPU quota 2 cores (cpu.max 200000 100000)" in text
    assert "throttled in 62 % of 300 scheduler periods over the last 30 s" in text
    assert "used 1.98 cores of 2" in text and "8 busy data-loader worker(s)" in text
    calm = replace(THROTTLED, window_throttled=0)
    for _ in range(20):
        sim.tick([BUSY], (LOADER,), jobs=(calm,), settings=SETTINGS)
    assert "cpu-throttled" not in sim.rules()  # ended once gone end_after_s


def test_cpu_quota_once_reads_the_cgroups_life_and_never_claims_without_periods() -> None:
    lifetime = replace(THROTTLED, window_periods=None, window_throttled=None, window_s=None)
    lifetime = replace(lifetime, cpu_periods=5000, cpu_throttled_periods=1500)
    assert "the cgroup's life so far" in " ".join(only(once(lifetime)[0], "cpu-throttled").evidence)
    assert once(replace(lifetime, cpu_throttled_periods=100))[1]["cpu-throttled"] == OK  # 2 %
    few = replace(lifetime, cpu_periods=10, cpu_throttled_periods=10)  # too few periods to say
    finding = only(once(few)[0], "cpu-throttled")
    assert finding.severity == "info" and "8 data-loader workers" in finding.evidence[1]
    assert once(replace(few, workers=0))[1]["cpu-throttled"] == OK
    # a window read with too few periods in it (the job barely ran lately): the cgroup's
    # throttled past is not today's verdict
    quiet = replace(lifetime, window_s=30.0, window_periods=12, window_throttled=12, workers=0)
    assert once(quiet)[1]["cpu-throttled"] == OK
    unread = replace(JOB, cpu_quota_us=None, unreadable=("cpu: /sys/fs/cgroup: Permission denied",))
    assert once(unread)[1]["cpu-throttled"] == "not judged"


def test_memory_limit_kills_and_page_cache() -> None:
    limited = replace(JOB, memory_limit=16 * GIB, memory_used=15 * GIB, memory_anon=6 * GIB)
    assert once(limited)[1]["cgroup-memory"] == OK  # page cache near the limit is dropped first
    near = replace(limited, memory_anon=15 * GIB)
    assert only(once(near)[0], "cgroup-memory").severity == "warning"
    killed = replace(near, memory_oom_kills=3, shm_used=2 * GIB)
    finding = only(once(killed)[0], "cgroup-memory")
    assert finding.severity == "critical" and "3 process(es)" in finding.evidence[1]
    assert "/dev/shm counts against this limit" in finding.evidence[2]


def test_cpuset_with_fewer_cpus_than_workers() -> None:
    small = replace(JOB, cpuset="0-3", window_s=30.0, window_cpu_s=110.0)
    finding = only(once(small)[0], "cpuset-small")
    assert (
        finding.severity == "warning"
        and "4 CPUs for 1 GPU process(es) and 8" in finding.evidence[0]
    )
    idle = replace(small, window_cpu_s=3.0)
    assert only(once(idle, processes=(TRAINER,))[0], "cpuset-small").severity == "info"
    assert once(replace(small, cpuset="0-15"))[1]["cpuset-small"] == OK


def test_shared_memory_small_full_or_unread() -> None:
    docker = replace(JOB, shm_size=64 * MIB, shm_used=2 * MIB, shm_mount="tmpfs size=65536k")
    finding = only(once(docker)[0], "shm-small")
    assert finding.severity == "warning" and "64.0 MiB (tmpfs size=65536k)" in finding.evidence[0]
    assert "8 data-loader workers" in finding.evidence[1]
    full = replace(JOB, shm_used=60 * GIB)
    assert only(once(full)[0], "shm-small").title.startswith("Shared memory (/dev/shm) nearly full")
    own = replace(docker, pids=(), own=True, workers=None)
    assert only(once(own)[0], "shm-small").severity == "info"  # its workers not known yet
    assert only(once(own)[0], "shm-small").gpu is None
    unread = replace(JOB, shm_used=None, unreadable=("shm: /proc/4242/root: Permission denied",))
    findings, states = once(unread)
    assert states["shm-small"] == "not judged" and not findings  # never a guess


def test_open_files_and_swap() -> None:
    pressed = replace(JOB, nofile_limit=1024, open_files=990)
    assert only(once(pressed)[0], "open-files").severity == "warning"
    low = replace(JOB, nofile_limit=1024, open_files=40)
    assert only(once(low)[0], "open-files").severity == "info"
    swapped = replace(JOB, swapped=300 * MIB)
    assert "300.0 MiB" in only(once(swapped)[0], "job-swapped").evidence[0]


# -- the environment ----------------------------------------------------------------------
PAIR = (H100, replace(H100, index=1, pci_bus_id="00000000:2A:00.0"))
#: two GPUs behind one PCIe switch, peer-to-peer both ways
TWO = tuple(
    replace(
        d,
        pcie_topology=("X", "PIX") if d.index == 0 else ("PIX", "X"),
        p2p_read=("X", "OK") if d.index == 0 else ("OK", "X"),
        p2p_write=("X", "OK") if d.index == 0 else ("OK", "X"),
    )
    for d in PAIR
)
BOTH = (BUSY, replace(BUSY, index=1))


def ranks(*env: str) -> tuple[ProcessSample, ...]:
    """A process on each GPU, ranks of one torchrun job, with ``env`` besides."""
    base = ("MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2")
    return tuple(
        replace(LOADER, pid=4242 + i, gpu_index=i, env=(*base, f"LOCAL_RANK={i}", *env))
        for i in (0, 1)
    )


def env_findings(
    *env: str, settings: HostSettings = SETTINGS, devices: tuple[DeviceInfo, ...] = TWO
) -> tuple[Finding, ...]:
    job = replace(JOB, pids=(4242, 4243))
    return once(job, settings, ranks(*env), devices, BOTH)[0]


def test_environment_settings_that_cost_throughput() -> None:
    assert env_findings() == ()
    found = env_findings("PYTORCH_NO_CUDA_MEMORY_CACHING=1", "TORCH_DISTRIBUTED_DEBUG=DETAIL")
    assert {f.rule for f in found} == {"no-cuda-caching", "distributed-debug"}
    assert {f.gpu for f in found} == {0, 1}
    quiet = env_findings("PYTORCH_NO_CUDA_MEMORY_CACHING=0", "TORCH_DISTRIBUTED_DEBUG=INFO")
    assert quiet == ()


def test_nccl_p2p_disabled_where_the_gpus_reach_each_other() -> None:
    finding = only(env_findings("NCCL_P2P_DISABLE=1"), "nccl-p2p-off")
    assert "GPU 0 and GPU 1: PCIe PIX" in finding.evidence[1]
    no_p2p = tuple(replace(d, p2p_read=("X", "CNS") if d.index == 0 else ("CNS", "X")) for d in TWO)
    found = env_findings("NCCL_P2P_DISABLE=1", devices=no_p2p)
    assert {f.rule for f in found} == {"p2p-unavailable"}  # nothing the variable turns off


def test_nccl_ib_disabled_on_a_host_with_infiniband() -> None:
    assert env_findings("NCCL_IB_DISABLE=1") == ()  # no InfiniBand here
    ib = replace(SETTINGS, ib_ports=("mlx5_0/1 InfiniBand",))
    one_node = only(env_findings("NCCL_IB_DISABLE=1", settings=ib), "nccl-ib-off")
    assert one_node.severity == "info"  # WORLD_SIZE 2 on 2 local ranks: costs nothing yet
    proc = replace(LOADER, env=("NCCL_IB_DISABLE=1", "WORLD_SIZE=16", "LOCAL_WORLD_SIZE=8"))
    assert only(once(JOB, ib, (proc,))[0], "nccl-ib-off").severity == "warning"
    unread = replace(SETTINGS, ib_ports=None)
    assert once(JOB, unread, (proc,))[1]["nccl-ib-off"] == "not judged"


def test_omp_threads_oversubscribe_the_cpus() -> None:
    crowded = replace(JOB, threads=8 * 65 + 70, cpuset="0-63")
    finding = only(once(crowded)[0], "omp-oversubscribed")
    assert "590 threads on 64 CPUs" in finding.evidence[1]
    told = replace(LOADER, env=("OMP_NUM_THREADS=4",))
    assert once(crowded, processes=(told,))[1]["omp-oversubscribed"] == OK


def test_visible_devices_order_against_the_cpu_binding() -> None:
    numa = tuple(
        replace(d, numa_node=d.index, cpu_affinity="0-31" if d.index == 0 else "32-63") for d in TWO
    )
    pinned = replace(
        LOADER, gpu_index=1, cpus_allowed="0-31", env=("CUDA_VISIBLE_DEVICES=1,0", "LOCAL_RANK=0")
    )
    finding = only(once(JOB, SETTINGS, (pinned,), numa, BOTH)[0], "visible-devices-order")
    assert (
        "it uses GPU 1 (NUMA node 1)" in finding.evidence[0] and "by GPU 0" in finding.evidence[1]
    )
    free = replace(pinned, cpus_allowed="0-63")
    assert once(JOB, SETTINGS, (free,), numa, BOTH)[1]["visible-devices-order"] == OK
    mixed = (numa[0], replace(numa[1], name="NVIDIA A100-SXM4-80GB"))
    plain = replace(free, env=("CUDA_VISIBLE_DEVICES=1,0",))
    assert (
        only(once(JOB, SETTINGS, (plain,), mixed, BOTH)[0], "visible-devices-order").severity
        == "info"
    )
    # one GPU named, on a node of two models: CUDA's numbers order them all, fastest first
    one = replace(free, env=("CUDA_VISIBLE_DEVICES=1",))
    assert (
        only(once(JOB, SETTINGS, (one,), mixed, BOTH)[0], "visible-devices-order").severity
        == "info"
    )


# -- the node and its GPUs ----------------------------------------------------------------
def test_p2p_unavailable_behind_one_switch_only() -> None:
    cns = tuple(
        replace(
            d,
            p2p_read=("X", "CNS") if d.index == 0 else ("CNS", "X"),
            p2p_write=("X", "CNS") if d.index == 0 else ("CNS", "X"),
        )
        for d in TWO
    )
    found = once(replace(JOB, pids=(4242, 4243)), SETTINGS, ranks(), cns, BOTH)[0]
    finding = only(found, "p2p-unavailable")
    assert "read CNS, write CNS (the chipset does not support it)" in finding.evidence[0]
    assert {f.gpu for f in found if f.rule == "p2p-unavailable"} == {0, 1}
    far = tuple(
        replace(d, pcie_topology=("X", "SYS") if d.index == 0 else ("SYS", "X")) for d in cns
    )
    assert once(replace(JOB, pids=(4242, 4243)), SETTINGS, ranks(), far, BOTH)[0] == ()
    alone = once(JOB, SETTINGS, (LOADER,), cns, BOTH)[1]  # one GPU's job: no pair to judge
    assert alone["p2p-unavailable"] == OK
    assert finding.severity == "warning"
    # GeForce since Ada: the board has no peer-to-peer (GNS); no ACS, BIOS or IOMMU remedy
    gns = tuple(
        replace(
            d,
            p2p_read=("X", "GNS") if d.index == 0 else ("GNS", "X"),
            p2p_write=("X", "GNS") if d.index == 0 else ("GNS", "X"),
        )
        for d in TWO
    )
    board = only(
        once(replace(JOB, pids=(4242, 4243)), SETTINGS, ranks(), gns, BOTH)[0], "p2p-unavailable"
    )
    assert board.severity == "info" and board.title.endswith("(the board has none)")
    assert not any("ACS" in r or "IOMMU" in r for r in board.remedies)


def test_compute_mode_with_a_second_process_waiting() -> None:
    exclusive = (replace(H100, compute_mode="Exclusive_Process", minor_number=0),)
    assert once(devices=exclusive)[1]["compute-mode"] == OK  # the mode alone is a choice
    waiting = replace(SETTINGS, waiters=(DeviceWaiter(5151, 0, "python"),))
    finding = only(once(settings=waiting, devices=exclusive)[0], "compute-mode")
    assert "pid 5151 (python) opened /dev/nvidia0" in finding.evidence[1]
    hidden = replace(SETTINGS, unreadable=("devices: 3 processes' open files not readable",))
    assert once(settings=hidden, devices=exclusive)[1]["compute-mode"] == "not judged"
    prohibited = (replace(H100, compute_mode="Prohibited"),)
    assert only(once(devices=prohibited)[0], "compute-mode").severity == "info"


def test_pending_modes_and_locked_clocks() -> None:
    pending = (
        replace(H100, mig_mode=False, mig_pending=True, ecc_enabled=True, ecc_pending=False),
    )
    finding = only(once(devices=pending)[0], "mode-pending")
    assert finding.severity == "warning" and len(finding.evidence) == 2
    locked = (replace(H100, max_graphics_clock_mhz=1980, p0_max_graphics_mhz=1410),)
    assert (
        "up to 1410 MHz of the board's 1980 MHz"
        in only(once(devices=locked)[0], "clocks-locked").evidence[0]
    )
    free = (replace(H100, max_graphics_clock_mhz=1980, p0_max_graphics_mhz=1980),)
    assert once(devices=free)[1]["clocks-locked"] == OK
    unread = (replace(H100, max_graphics_clock_mhz=1980),)
    assert once(devices=unread)[1]["clocks-locked"] == "not judged"
    # a source that reads no configuration (simulated, remote): silent, not "not judged"
    assert once(settings=None, devices=unread)[1]["clocks-locked"] == OK


def test_host_settings() -> None:
    slow = replace(
        SETTINGS,
        governor="powersave",
        cpufreq_driver="acpi-cpufreq",
        cpu_mhz=800.0,
        cpu_max_mhz=3500.0,
    )
    finding = only(once(settings=slow)[0], "cpu-governor")
    assert finding.gpu is None and "mean clock 800 MHz of 3500 MHz" in finding.evidence[1]
    scaling = replace(slow, cpufreq_driver="intel_pstate")  # powersave scales with load there
    assert once(settings=scaling)[1]["cpu-governor"] == OK
    assert (
        only(
            once(settings=replace(SETTINGS, thp_enabled="always", thp_defrag="always"))[0],
            "thp-defrag",
        ).severity
        == "info"
    )
    balancing = replace(SETTINGS, numa_balancing=True, numa_pages_migrated=123456)
    assert (
        "123456 pages migrated" in only(once(settings=balancing)[0], "numa-balancing").evidence[1]
    )
    assert once(settings=replace(balancing, numa_nodes=1))[1]["numa-balancing"] == OK


def test_thresholds_are_the_configs() -> None:
    """A threshold changed in the config changes the verdict (nothing hard-coded)."""
    t = Thresholds(shm_min_bytes=32 * MIB)
    frame = Frame(
        1.0,
        (BUSY,),
        HOST,
        (LOADER,),
        jobs=(replace(JOB, shm_size=64 * MIB, shm_used=0),),
        settings=SETTINGS,
    )
    assert check_once((H100,), frame, t).findings == ()
    assert only(check_once((H100,), frame).findings, "shm-small").severity == "warning"


def test_the_readme_lists_every_configuration_check_with_what_it_reads_and_its_fix() -> None:
    """README's "Configuration checks" table: one row a check doctor --config runs, each
    with its source and its fix, and no row for a check that does not exist."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Configuration checks") :]
    section = section[: section.index("\n## ")]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1:]
    assert set(rows) == {r.id.value for r in configuration_rules()}
    assert all(reads and fix for reads, fix in rows.values())


def test_every_configuration_check_says_what_it_looks_at() -> None:
    from gputui.advisor.config_check import CHECKED

    assert set(CHECKED) == {r.id for r in configuration_rules()}
    assert all(CHECKED.values())
    frame = Frame(1.0, (BUSY,), HOST, (LOADER,), jobs=(JOB,), settings=SETTINGS)
    checks = check_once((H100,), frame).checks
    assert [c.to_dict()["checked"] for c in checks] == [CHECKED[c.rule] for c in checks]
