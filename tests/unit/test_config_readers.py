"""The configuration readers on files as Linux writes them: /proc/PID/cgroup layouts (v1,
v2, the hybrid), mountinfo (cgroup mounts, a container's, stacked /dev/shm), cgroup v1 and
v2 cpu.stat, memory files, sysfs switches, /proc/PID/limits and status; captured files are
committed under tests/fixtures/config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gputui.sources.cgroups import (
    cgroup_dir,
    parse_mountinfo,
    parse_proc_cgroup,
    read_cgroup,
    visible_mount,
)
from gputui.sources.host_settings import (
    device_waiters,
    governors,
    huge_pages,
    infiniband_ports,
    numa_balancing,
    process_limits,
    selected,
)
from gputui.sources.shm import read_shm, tmpfs_size

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "config"
MIB = 1 << 20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# -- /proc/PID/cgroup and mountinfo, as captured ----------------------------------------
def test_proc_cgroup_layouts() -> None:
    v2 = parse_proc_cgroup(fixture("proc_cgroup_v2_kubernetes"))
    assert len(v2) == 1 and v2[0].hierarchy == 0 and v2[0].controllers == ()
    assert v2[0].path.startswith("/kubepods.slice/") and v2[0].path.endswith(".scope")
    docker = parse_proc_cgroup(fixture("proc_cgroup_v1_docker"))
    cpu = next(m for m in docker if "cpu" in m.controllers)
    assert cpu.controllers == ("cpu", "cpuacct") and cpu.path == "/docker/8e3b7c"
    assert any(m.controllers == ("name=systemd",) for m in docker)
    hybrid = parse_proc_cgroup(fixture("proc_cgroup_v1_hybrid"))
    assert {m.path for m in hybrid if "memory" in m.controllers} == {"/batch/job-7"}
    assert [m.path for m in hybrid if m.hierarchy == 0] == ["/"]
    assert parse_proc_cgroup("garbage\n3:x\n") == []


def test_mountinfo_fields_escapes_and_stacking() -> None:
    docker = parse_mountinfo(fixture("mountinfo_v1_docker"))
    cpu = next(m for m in docker if m.point == "/sys/fs/cgroup/cpu,cpuacct")
    assert (cpu.fstype, cpu.root) == ("cgroup", "/docker/8e3b7c")
    assert "cpuacct" in cpu.options.split(",") and "ro" in cpu.options.split(",")
    assert any(m.point == "/etc/host name" for m in docker)  # \040 is a space
    shm = visible_mount(docker, "/dev/shm")
    assert shm is not None and tmpfs_size(shm.options) == 64 * MIB
    stacked = parse_mountinfo(fixture("mountinfo_shm_stacked"))
    assert len([m for m in stacked if m.point == "/dev/shm"]) == 3
    top = visible_mount(stacked, "/dev/shm")
    assert top is not None and "size=65536k" in top.options  # the one mounted last, on top
    assert parse_mountinfo("1 2 3\nnot a mount line\n") == []


def test_cgroup_directories_for_each_layout() -> None:
    docker = cgroup_dir(
        parse_proc_cgroup(fixture("proc_cgroup_v1_docker")),
        parse_mountinfo(fixture("mountinfo_v1_docker")),
        "cpu",
    )
    # inside the container the cgroup's root is mounted where the hierarchy is
    assert docker is not None and docker[0] == Path("/sys/fs/cgroup/cpu,cpuacct") and docker[2] == 1
    v2 = cgroup_dir(
        parse_proc_cgroup(fixture("proc_cgroup_v2_kubernetes")),
        parse_mountinfo(fixture("mountinfo_v2")),
        "memory",
    )
    assert v2 is not None and v2[2] == 2
    assert str(v2[0]).startswith("/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/")
    hybrid_members = parse_proc_cgroup(fixture("proc_cgroup_v1_hybrid"))
    hybrid_mounts = parse_mountinfo(fixture("mountinfo_v1_hybrid"))
    memory = cgroup_dir(hybrid_members, hybrid_mounts, "memory")
    assert memory is not None and memory[0] == Path("/sys/fs/cgroup/memory/batch/job-7")
    # a controller the v1 hierarchies lack falls to the unified one (mounted, no controllers)
    io = cgroup_dir(hybrid_members, hybrid_mounts, "io")
    assert io is not None and io[2] == 2 and io[0] == Path("/sys/fs/cgroup/unified")
    # another cgroup namespace's path ("/../..") is not visible from here
    outside = parse_proc_cgroup("0::/../../other.scope\n")
    assert cgroup_dir(outside, parse_mountinfo(fixture("mountinfo_v2")), "cpu") is None


# -- a cgroup tree on disk ----------------------------------------------------------------
def _proc(tmp: Path, pid: int, cgroup: str, mountinfo: str) -> Path:
    proc = tmp / "proc"
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / "self").mkdir(exist_ok=True)
    (proc / str(pid) / "cgroup").write_text(cgroup)
    (proc / "self" / "mountinfo").write_text(mountinfo.replace("/sys/fs/cgroup", f"{tmp}/cg"))
    return proc


def _write(directory: Path, **files: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("__", ".")).write_text(text)


def test_cgroup_v2_binding_quota_on_the_parent(tmp_path: Path) -> None:
    """Kubernetes: the pod's cgroup holds the quota, the container's none; the tightest up
    the tree binds, with the throttling of the cgroup that holds it."""
    leaf = "/kubepods.slice/pod7c1e.slice/cri-4f2a.scope"
    proc = _proc(tmp_path, 42, f"0::{leaf}\n", fixture("mountinfo_v2"))
    root = tmp_path / "cg"
    _write(root, cpu__max="max 100000\n")
    _write(root / "kubepods.slice", cpu__max="max 100000\n", memory__max="max\n")
    _write(
        root / "kubepods.slice/pod7c1e.slice",
        cpu__max="200000 100000\n",
        cpu__stat=fixture("cpu_stat_v2"),
        memory__max=str(8 << 30) + "\n",  # the pod's limit: both its containers count
        memory__current=str(7 << 30) + "\n",
        memory__stat=f"anon {6 << 30}\nfile {1 << 29}\nshmem {1 << 29}\n",
        memory__events="low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\n",
    )
    _write(
        root / leaf.lstrip("/"),
        cpu__max="max 100000\n",
        cpu__stat="usage_usec 5000000\nnr_periods 10\nnr_throttled 0\nthrottled_usec 0\n",
        memory__max="max\n",
        memory__current=str(4 << 30) + "\n",  # this container's alone
        memory__stat=f"anon {3 << 30}\nfile {1 << 30}\nshmem 0\n",
        memory__events="low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
        cpuset__cpus__effective="0-7\n",
    )
    found = read_cgroup(42, proc)
    assert (found.version, found.path) == (2, leaf)
    assert (found.cpu_quota_us, found.cpu_period_us) == (200000, 100000)
    assert (found.cpu_periods, found.cpu_throttled_periods) == (1200, 744)  # the pod's
    assert found.cpu_throttled_s == pytest.approx(98.765432)
    assert found.cpu_usage_s == pytest.approx(5.0)  # the leaf's own use
    assert found.memory_limit == 8 << 30 and found.memory_used == 7 << 30  # the pod's
    assert found.memory_anon == (6 << 30) + (1 << 29) and found.memory_oom_kills == 2
    assert found.cpuset == "0-7" and found.unreadable == []
    # without a limit anywhere up the tree: no limit, and the container's own use
    (root / "kubepods.slice/pod7c1e.slice/memory.max").write_text("max\n")
    found = read_cgroup(42, proc)
    assert found.memory_limit == -1 and found.memory_used == 4 << 30
    assert found.memory_anon == 3 << 30 and found.memory_oom_kills == 0


def test_cgroup_v1_quota_throttling_and_accounting(tmp_path: Path) -> None:
    mountinfo = fixture("mountinfo_v1_hybrid")
    cgroup = fixture("proc_cgroup_v1_hybrid").replace("1:cpu:/", "1:cpu:/job")
    cgroup = cgroup.replace("2:cpuacct:/", "2:cpuacct:/job")
    proc = _proc(tmp_path, 7, cgroup, mountinfo)
    root = tmp_path / "cg"
    _write(root / "cpu", cpu__cfs_quota_us="-1\n", cpu__cfs_period_us="100000\n")
    _write(
        root / "cpu/job",
        cpu__cfs_quota_us="20000\n",
        cpu__cfs_period_us="100000\n",
        cpu__stat=fixture("cpu_stat_v1"),
    )
    _write(root / "cpuacct", cpuacct__usage="99000000000\n")  # the whole machine's
    _write(root / "cpuacct/job", cpuacct__usage="3500000000\n")
    _write(
        root / "memory/batch/job-7",
        memory__stat=f"cache 100\nrss {1 << 30}\nshmem 0\nhierarchical_memory_limit "
        f"{4 << 30}\ntotal_rss {2 << 30}\ntotal_shmem {1 << 20}\n",
        memory__usage_in_bytes=str(3 << 30) + "\n",
        memory__oom_control="oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
    )
    _write(root / "cpuset", cpuset__effective_cpus="0-1\n")
    found = read_cgroup(7, proc)
    assert found.version == 1 and found.path == "/job"
    assert (found.cpu_quota_us, found.cpu_period_us) == (20000, 100000)
    assert (found.cpu_periods, found.cpu_throttled_periods) == (18, 15)
    assert found.cpu_throttled_s == pytest.approx(1.19293175)  # throttled_time is in ns
    assert found.cpu_usage_s == pytest.approx(3.5)
    assert found.memory_limit == 4 << 30 and found.memory_anon == (2 << 30) + (1 << 20)
    assert found.memory_oom_kills == 0 and found.cpuset == "0-1"
    # a Slurm-like parent holds the limit, the leaf has none (v1 writes 2^63 rounded down)
    _write(root / "memory/batch/job-7", memory__limit_in_bytes="9223372036854771712\n")
    _write(
        root / "memory/batch",
        memory__limit_in_bytes=str(2 << 30) + "\n",
        memory__usage_in_bytes=str(2 << 30) + "\n",
        memory__stat=f"rss 0\ntotal_rss {(2 << 30) - (1 << 20)}\ntotal_shmem 0\n",
        memory__oom_control="oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
    )
    found = read_cgroup(7, proc)
    assert found.memory_limit == 2 << 30 and found.memory_used == 2 << 30
    assert found.memory_anon == (2 << 30) - (1 << 20) and found.memory_oom_kills == 3
    # in another cpuacct cgroup than its cpu one, the counter is not this cgroup's use
    elsewhere = _proc(tmp_path, 8, cgroup.replace("2:cpuacct:/job", "2:cpuacct:/"), mountinfo)
    assert read_cgroup(8, elsewhere).cpu_usage_s is None


def test_cgroup_without_limits_and_unreadable(tmp_path: Path) -> None:
    proc = _proc(tmp_path, 9, "0::/\n", fixture("mountinfo_v2"))
    _write(tmp_path / "cg", cpu__stat="usage_usec 1\n", memory__current="1\n")
    found = read_cgroup(9, proc)
    assert found.cpu_quota_us == -1 and found.memory_limit == -1  # the root has no limits
    missing = read_cgroup(10, proc)  # no /proc/10: every area says why, nothing is guessed
    assert missing.cpu_quota_us is None
    assert [u.split(":")[0] for u in missing.unreadable] == ["cpu", "memory", "cpuset"]
    hidden = _proc(tmp_path, 11, "0::/../../elsewhere\n", fixture("mountinfo_v2"))
    assert all("not visible" in u for u in read_cgroup(11, hidden).unreadable)


# -- /dev/shm -----------------------------------------------------------------------------
def test_tmpfs_sizes() -> None:
    assert tmpfs_size("rw,nosuid,size=65536k,inode64") == 64 * MIB
    assert tmpfs_size("rw,size=2g") == 2 << 30 and tmpfs_size("size=1048576") == MIB
    assert tmpfs_size("rw,size=50%") is None and tmpfs_size("rw,mode=755") is None


def test_shm_in_the_jobs_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "proc" / "5"
    (base / "root" / "dev" / "shm").mkdir(parents=True)
    (base / "mountinfo").write_text(fixture("mountinfo_shm_stacked"))
    found = read_shm(5, tmp_path / "proc")
    assert found.mount == "tmpfs size=65536k" and found.unreadable is None
    stat = os.statvfs(base / "root" / "dev" / "shm")  # here: the test's own filesystem
    assert found.size == stat.f_blocks * stat.f_frsize

    def refused(path: object) -> os.statvfs_result:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "statvfs", refused)
    limited = read_shm(5, tmp_path / "proc")
    # another user's job: the size from its mount, its use not readable, and why
    assert limited.size == 64 * MIB and limited.used is None
    assert limited.unreadable is not None and "Permission denied" in limited.unreadable
    (base / "mountinfo").write_text(fixture("mountinfo_v1_hybrid").replace("/dev/shm", "/run/x"))
    monkeypatch.undo()
    assert read_shm(5, tmp_path / "proc").mount == ""  # /dev/shm is no mount of its own


# -- host settings ------------------------------------------------------------------------
def test_governors_from_the_policies(tmp_path: Path) -> None:
    base = tmp_path / "devices/system/cpu/cpufreq"
    for n, gov, cpus, now in (
        (0, "powersave", "0 1 2 3", "800000"),
        (4, "performance", "4 5", "3000000"),
    ):
        _write(
            base / f"policy{n}",
            scaling_governor=gov + "\n",
            scaling_driver="acpi-cpufreq\n",
            affected_cpus=cpus + "\n",
            scaling_cur_freq=now + "\n",
            cpuinfo_max_freq="3500000\n",
        )
    found = governors(tmp_path)
    assert (found.governor, found.count, found.cpus, found.driver) == (
        "powersave",
        4,
        6,
        "acpi-cpufreq",
    )
    assert found.mhz == pytest.approx((4 * 800 + 2 * 3000) / 6) and found.max_mhz == 3500
    assert governors(tmp_path / "none").governor is None  # a VM without a frequency driver


def test_switches_numa_and_infiniband(tmp_path: Path) -> None:
    assert selected("always [madvise] never") == "madvise" and selected("never") == "never"
    _write(tmp_path / "kernel/mm/transparent_hugepage", enabled="[always] madvise never\n",
           defrag="[always] defer defer+madvise madvise never\n")  # fmt: skip
    assert huge_pages(tmp_path) == ("always", "always")
    proc = tmp_path / "proc"
    _write(proc / "sys/kernel", numa_balancing="1\n")
    _write(proc, vmstat="nr_free_pages 1\nnuma_pages_migrated 4242\npgfault 9\n")
    for node in (0, 1):
        (tmp_path / f"devices/system/node/node{node}").mkdir(parents=True)
    assert numa_balancing(proc, tmp_path) == (True, 2, 4242)
    assert infiniband_ports(tmp_path) == ()
    for device, port, state, layer in (
        ("mlx5_0", 1, "4: ACTIVE", "InfiniBand"),
        ("mlx5_1", 1, "1: DOWN", "InfiniBand"),
        ("mlx5_2", 1, "4: ACTIVE", "Ethernet"),
    ):
        _write(tmp_path / f"class/infiniband/{device}/ports/{port}", state=state, link_layer=layer)
    assert infiniband_ports(tmp_path) == ("mlx5_0/1 InfiniBand", "mlx5_2/1 RoCE")


def test_process_limits_and_swap(tmp_path: Path) -> None:
    limits = (
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max cpu time              unlimited            unlimited            seconds\n"
        "Max open files            {soft}                 1048576              files\n"
    )
    for pid, soft, fds, swap in ((1, 1024, 1000, 2048), (2, 65536, 3, 0)):
        _write(tmp_path / str(pid), limits=limits.format(soft=soft),
               status=f"Name:\tpython\nVmRSS:\t 1000 kB\nVmSwap:\t {swap} kB\n"
                      f"Threads:\t{pid * 4}\n")  # fmt: skip
        (tmp_path / str(pid) / "fd").mkdir()
        for fd in range(fds):
            os.symlink("/dev/null", tmp_path / str(pid) / "fd" / str(fd))
    found = process_limits([1, 2, 3], tmp_path)  # 3 is gone
    assert (found.nofile, found.open_files) == (1024, 1000)  # the most pressed one
    assert found.swapped == 2048 * 1024 and found.unreadable == []
    assert found.threads == 4 + 8


def test_device_waiters(tmp_path: Path) -> None:
    """A process holding /dev/nvidia1 with libcuda mapped and no context is a waiter; one
    without libcuda (nvidia-smi, DCGM) or listed by NVML is not."""
    for pid, device, maps, comm in (
        (
            100,
            "/dev/nvidia1",
            "7f00 r-xp /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n",
            "python",
        ),
        (101, "/dev/nvidia1", "7f00 r-xp /usr/lib/libnvidia-ml.so.1\n", "nvidia-smi"),
        (102, "/dev/nvidia0", "7f00 r-xp /usr/lib/libcuda.so.1\n", "python"),
        (103, "/dev/nvidia1", "7f00 r-xp /usr/lib/libcuda.so.1\n", "python"),
    ):
        _write(tmp_path / str(pid), maps=maps, comm=comm + "\n")
        (tmp_path / str(pid) / "fd").mkdir()
        os.symlink(device, tmp_path / str(pid) / "fd" / "5")
    waiters, why = device_waiters({1}, skip={103}, proc=tmp_path)
    assert [(w.pid, w.minor, w.name) for w in waiters] == [(100, 1, "python")] and why is None


# -- the settings reader: jobs, their window, the cache, gputui's own job -----------------
def test_settings_reader_groups_jobs_and_opens_a_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.core.model import ProcessSample
    from gputui.sources.settings import JOB_PERIOD_S, SettingsReader

    leaf = "/job.slice"
    proc = _proc(tmp_path, 42, f"0::{leaf}\n", fixture("mountinfo_v2"))
    (proc / "43").mkdir()
    (proc / "43" / "cgroup").write_text(f"0::{leaf}\n")
    (proc / "self" / "cgroup").write_text("0::/user.slice\n")
    cg = tmp_path / "cg"
    _write(cg / "job.slice", cpu__max="400000 100000\n", memory__max="max\n")
    stat = cg / "job.slice" / "cpu.stat"
    stat.write_text("usage_usec 1000000\nnr_periods 100\nnr_throttled 10\nthrottled_usec 5\n")
    _write(cg / "user.slice", cpu__max="max 100000\n")
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    now = [0.0]
    reader = SettingsReader(clock=lambda: now[0], own=True, own_workers=6, proc=proc, sys=tmp_path)
    ranks = (ProcessSample(42, 0), ProcessSample(43, 1), ProcessSample(42, 1))
    jobs, host = reader.read(ranks, lambda pid: ())
    job, own = jobs
    assert job.pids == (42, 43) and job.cgroup == leaf and job.cpu_quota_us == 400000
    assert job.window_periods is None  # one reading
    assert own.own and own.workers == 6 and own.cgroup == "/user.slice"
    assert own.env == ("CUDA_LAUNCH_BLOCKING=1",)  # only the names gputui reads
    assert host.ib_ports == () and host.governor is None
    stat.write_text("usage_usec 25000000\nnr_periods 400\nnr_throttled 250\nthrottled_usec 9\n")
    now[0] = 3.0
    assert reader.read(ranks, lambda pid: ())[0][0] is job  # read a moment ago: kept
    now[0] = JOB_PERIOD_S + 1.0
    job = reader.read(ranks, lambda pid: ())[0][0]
    assert (job.window_s, job.window_periods, job.window_throttled) == (now[0], 300, 240)
    assert job.window_cpu_s == pytest.approx(24.0)  # 4 cores used of the quota's 4
    (proc / "self" / "cgroup").write_text(f"0::{leaf}\n")  # doctor runs inside the job
    now[0] += JOB_PERIOD_S
    job, own = reader.read(ranks, lambda pid: ())[0]  # its own environment still judged
    assert not job.own and job.pids == (42, 43) and not job.env
    assert own.own and own.cgroup == leaf and own.workers == 6
    assert own.env == ("CUDA_LAUNCH_BLOCKING=1",)
