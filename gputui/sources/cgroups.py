"""A process's cgroup and what it bounds: the CPU quota and how often the kernel throttles
it, the memory limit, the cpuset. cgroup v2 and v1 (and the hybrid of both), found through
/proc/PID/cgroup and the cgroup mounts of /proc/self/mountinfo; read-only, every file
readable by any user on a stock kernel.

A limit can sit on a parent (a Kubernetes pod's cgroup, a systemd slice): the directories
are walked from the process's own cgroup up to the mount's root, and the tightest limit
found is the one that binds, with the counters of the cgroup that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import field
from functools import lru_cache
from pathlib import Path

from gputui.core.records import frozen, record
from gputui.sources import proc_files

#: a memory limit at or above this is "no limit" (cgroup v1 writes 2^63 rounded to a page)
_NO_LIMIT = 1 << 62

_ESCAPE = re.compile(r"\\([0-7]{3})")


@frozen
class Mount:
    """One line of a mountinfo file."""

    mount_id: int
    parent: int
    root: str  # the directory of the filesystem that is mounted here
    point: str  # where it is mounted
    fstype: str
    source: str
    options: str  # the mount's options and the filesystem's, comma-separated


@frozen
class Membership:
    """One line of /proc/PID/cgroup: a hierarchy, its controllers, the process's path."""

    hierarchy: int
    controllers: tuple[str, ...]  # () for cgroup v2's unified hierarchy
    path: str


@record
class CgroupReading:
    """What a process's cgroup bounds, as ``JobSettings`` fields; None where unknown."""

    version: int | None = None
    path: str | None = None
    cpu_quota_us: int | None = None
    cpu_period_us: int | None = None
    cpu_periods: int | None = None
    cpu_throttled_periods: int | None = None
    cpu_throttled_s: float | None = None
    cpu_usage_s: float | None = None
    memory_limit: int | None = None
    memory_used: int | None = None
    memory_anon: int | None = None
    memory_oom_kills: int | None = None
    cpuset: str | None = None
    #: "area: why" for what could not be read
    unreadable: list[str] = field(default_factory=list)


def _unescape(text: str) -> str:
    """mountinfo writes a space as \\040, a tab as \\011, a backslash as \\134."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a mountinfo file ("36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
    /dev/root rw"); lines it cannot read are skipped."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        head, tail = left.split(), right.split()
        if not sep or len(head) < 6 or len(tail) < 2 or not head[0].isdigit():
            continue
        if not head[1].isdigit():
            continue
        options = head[5] + ("," + tail[2] if len(tail) > 2 else "")
        mounts.append(
            Mount(
                int(head[0]),
                int(head[1]),
                _unescape(head[3]),
                _unescape(head[4]),
                tail[0],
                _unescape(tail[1]),
                options,
            )
        )
    return mounts


def parse_proc_cgroup(text: str) -> list[Membership]:
    """/proc/PID/cgroup: "0::/user.slice" (v2), "4:memory:/docker/abc" or
    "2:cpu,cpuacct:/" (v1), "1:name=systemd:/" (a named v1 hierarchy)."""
    out = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        controllers = tuple(c for c in parts[1].split(",") if c)
        out.append(Membership(int(parts[0]), controllers, parts[2]))
    return out


def visible_mount(mounts: Sequence[Mount], point: str) -> Mount | None:
    """The mount one sees at ``point``: of several stacked there, the one nothing else at
    that point is mounted on."""
    here = [m for m in mounts if m.point == point]
    covered = {m.parent for m in here}
    top = [m for m in here if m.mount_id not in covered]
    return top[-1] if top else (here[-1] if here else None)


def cgroup_dir(
    memberships: Sequence[Membership], mounts: Sequence[Mount], controller: str
) -> tuple[Path, Path, int, str] | None:
    """Where ``controller``'s files of this process's cgroup are: (its directory, the
    mount's root directory, the cgroup version, the cgroup path); a v1 hierarchy that has
    the controller first, else the v2 one. None where no mount shows that cgroup (another
    cgroup namespace's path, or the hierarchy is not mounted here)."""
    for member in memberships:
        if controller in member.controllers:
            for mount in mounts:
                if mount.fstype == "cgroup" and controller in mount.options.split(","):
                    found = _inside(mount, member.path)
                    if found is not None:
                        return found, Path(mount.point), 1, member.path
    for member in memberships:
        if member.hierarchy == 0 and not member.controllers:
            for mount in mounts:
                if mount.fstype == "cgroup2":
                    found = _inside(mount, member.path)
                    if found is not None:
                        return found, Path(mount.point), 2, member.path
    return None


def _inside(mount: Mount, path: str) -> Path | None:
    """The directory of cgroup ``path`` under ``mount``, if the mount shows it."""
    path = path.removesuffix(" (deleted)")
    if ".." in path.split("/"):
        return None  # above this reader's cgroup namespace: not visible from here
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    return Path(mount.point + path[len(root) :])


def _ancestry(leaf: str, top: str) -> Iterator[str]:
    """``leaf`` and its parents up to ``top`` (the mount point), leaf first. Both are
    written as a ``Path`` writes them; the walk is on strings, as every path under it is
    joined (a job's files are read every few seconds: ``pathlib`` was a third of it)."""
    under = top.rstrip("/") + "/"
    current = leaf
    while True:
        yield current
        if current == top or not current.startswith(under):
            return
        current = current.rsplit("/", 1)[0] or "/"


def _text(path: str) -> str | None:
    try:
        return proc_files.text(path)
    except FileNotFoundError:
        return None


def mount_table(pid: int | str, proc: Path = Path("/proc")) -> tuple[list[Mount], bool]:
    """The mounts ``pid`` ("self": gputui's own) sees, as far as the bound of a mount
    table (``proc_files``), and whether the table held more (the rest not read). OSError
    where it cannot be read."""
    found, cut = proc_files.lines(
        f"{proc}/{pid}/mountinfo",
        proc_files.MAX_MOUNTINFO_BYTES,
        proc_files.MAX_MOUNTINFO_LINES,
    )
    return list(_parsed("\n".join(found))), cut


@lru_cache(maxsize=16)
def _parsed(text: str) -> tuple[Mount, ...]:
    """``parse_mountinfo`` of a table read before: gputui's own and each job's are read
    again every few seconds, and hardly ever change."""
    return tuple(parse_mountinfo(text))


def _keyed(text: str | None) -> dict[str, int]:
    """'name value' lines (cpu.stat, memory.stat, memory.events) as a dict."""
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[name] = int(value.strip())
    return out


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def read_cgroup(pid: int | str, proc: Path = Path("/proc")) -> CgroupReading:
    """What the cgroup of ``pid`` ("self" for gputui's own) bounds; a part that cannot be
    read is named in ``unreadable`` rather than guessed."""
    out = CgroupReading()
    try:
        memberships = parse_proc_cgroup(proc_files.text(f"{proc}/{pid}/cgroup"))
        mounts, _cut = mount_table("self", proc)  # gputui's own: its cgroup mounts come first
    except OSError as exc:
        why = f"{proc}/{pid}/cgroup: {_why(exc)}"
        out.unreadable += [f"cpu: {why}", f"memory: {why}", f"cpuset: {why}"]
        return out
    for area, reader in (("cpu", _read_cpu), ("memory", _read_memory), ("cpuset", _read_cpuset)):
        found = cgroup_dir(memberships, mounts, area)
        if found is None:
            out.unreadable.append(f"{area}: its cgroup is not visible from gputui's namespace")
            continue
        directory, top, version, path = found
        if out.version is None or area == "cpu":
            out.version, out.path = version, path
        try:
            reader(out, str(directory), str(top), version, memberships, mounts)
        except OSError as exc:
            out.unreadable.append(f"{area}: {directory}: {_why(exc)}")
    return out


def _read_cpu(
    out: CgroupReading,
    leaf: str,
    top: str,
    version: int,
    memberships: Sequence[Membership],
    mounts: Sequence[Mount],
) -> None:
    """The tightest CPU quota from the process's cgroup up, and that cgroup's throttling;
    the CPU time the leaf used (v1: the cpuacct hierarchy's counter)."""
    binding: tuple[float, str, int, int] | None = None  # cores, where, quota, period
    for directory in _ancestry(leaf, top):
        quota, period = _quota(directory, version)
        if quota is not None and quota > 0 and period:
            cores = quota / period
            if binding is None or cores < binding[0]:
                binding = (cores, directory, quota, period)
    where = binding[1] if binding is not None else leaf
    stat = _keyed(_text(f"{where}/cpu.stat"))
    if binding is not None:
        out.cpu_quota_us, out.cpu_period_us = binding[2], binding[3]
    else:
        out.cpu_quota_us, out.cpu_period_us = -1, _quota(leaf, version)[1]
    out.cpu_periods = stat.get("nr_periods")
    out.cpu_throttled_periods = stat.get("nr_throttled")
    if version == 2:
        throttled = stat.get("throttled_usec")
        out.cpu_throttled_s = throttled / 1e6 if throttled is not None else None
        usage = _keyed(_text(f"{leaf}/cpu.stat")).get("usage_usec")
        out.cpu_usage_s = usage / 1e6 if usage is not None else None
        return
    throttled = stat.get("throttled_time")  # nanoseconds
    out.cpu_throttled_s = throttled / 1e9 if throttled is not None else None
    acct = cgroup_dir(memberships, mounts, "cpuacct")
    if acct is not None and acct[3] == out.path:  # the same cgroup, not a parent's total
        text = _text(f"{acct[0]}/cpuacct.usage")
        if text is not None and text.strip().isdigit():
            out.cpu_usage_s = int(text) / 1e9


def _quota(directory: str, version: int) -> tuple[int | None, int | None]:
    """The quota and period of one cgroup (µs); quota -1 for none, None unknown."""
    if version == 2:
        text = _text(f"{directory}/cpu.max")
        if text is None:
            return None, None
        quota, _, period = text.strip().partition(" ")
        size = int(period) if period.isdigit() else None
        return (-1 if quota == "max" else int(quota) if quota.isdigit() else None), size
    quota_text = _text(f"{directory}/cpu.cfs_quota_us")
    period_text = _text(f"{directory}/cpu.cfs_period_us")
    if quota_text is None:
        return None, None
    size = int(period_text) if period_text and period_text.strip().isdigit() else None
    try:
        return int(quota_text), size
    except ValueError:
        return None, size


def _read_memory(
    out: CgroupReading,
    leaf: str,
    top: str,
    version: int,
    _memberships: Sequence[Membership],
    _mounts: Sequence[Mount],
) -> None:
    """The tightest memory limit from the process's cgroup up, and the use of the cgroup
    that holds it (a pod's limit counts every container in the pod): the part that cannot
    be dropped (anonymous and shared memory) and its OOM kills; without a limit, the
    leaf's."""
    name = "memory.max" if version == 2 else "memory.limit_in_bytes"
    limit, where = None, leaf
    for directory in _ancestry(leaf, top):
        text = _text(f"{directory}/{name}")
        value = int(text) if text is not None and text.strip().isdigit() else _NO_LIMIT
        if value < _NO_LIMIT and (limit is None or value < limit):
            limit, where = value, directory
    stat = _keyed(_text(f"{where}/memory.stat"))
    if version == 2:
        current = _text(f"{where}/memory.current")
        if "anon" in stat:
            out.memory_anon = stat["anon"] + stat.get("shmem", 0)
        out.memory_oom_kills = _keyed(_text(f"{where}/memory.events")).get("oom_kill")
    else:
        if limit is None:  # the kernel's own answer, where the walk saw no file
            hierarchical = stat.get("hierarchical_memory_limit")
            limit = hierarchical if hierarchical is not None and hierarchical < _NO_LIMIT else None
        current = _text(f"{where}/memory.usage_in_bytes")
        rss = stat.get("total_rss", stat.get("rss"))
        if rss is not None:
            out.memory_anon = rss + stat.get("total_shmem", stat.get("shmem", 0))
        out.memory_oom_kills = _keyed(_text(f"{where}/memory.oom_control")).get("oom_kill")
    out.memory_limit = limit if limit is not None else -1
    out.memory_used = int(current) if current and current.strip().isdigit() else None


def _read_cpuset(
    out: CgroupReading,
    leaf: str,
    top: str,
    version: int,
    _memberships: Sequence[Membership],
    _mounts: Sequence[Mount],
) -> None:
    """The CPUs the cgroup may use: the nearest cgroup up that says."""
    names = ("cpuset.cpus.effective",) if version == 2 else ("cpuset.effective_cpus", "cpuset.cpus")
    for directory in _ancestry(leaf, top):
        for name in names:
            text = _text(f"{directory}/{name}")
            if text is not None and text.strip():
                out.cpuset = text.strip()
                return
