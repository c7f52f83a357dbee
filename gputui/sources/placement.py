"""Where a process may run and where its memory sits: CPU lists, NUMA nodes, numa_maps."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from gputui.sources import proc_files

_NUMA_NODE = re.compile(r"\bN(\d+)=(\d+)")


_PAGE_KB = re.compile(r"\bkernelpagesize_kB=(\d+)")


def parse_cpu_list(text: str) -> set[int]:
    """Linux list format to CPU numbers: "0-2,5" -> {0, 1, 2, 5}; bad parts are skipped."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.strip().partition("-")
        if first.isdigit() and (not last or last.isdigit()):
            end = int(last) if last else int(first)
            if end - int(first) <= 65536:
                cpus.update(range(int(first), end + 1))
    return cpus


def node_cpus(root: Path = Path("/sys")) -> dict[int, set[int]]:
    """NUMA node -> its CPUs, from /sys/devices/system/node/nodeN/cpulist."""
    out: dict[int, set[int]] = {}
    with contextlib.suppress(OSError):
        for folder in (root / "devices" / "system" / "node").glob("node[0-9]*"):
            with contextlib.suppress(OSError, ValueError):
                out[int(folder.name[4:])] = parse_cpu_list((folder / "cpulist").read_text())
    return out


def allowed_cpus(pid: int, proc: str | Path = "/proc") -> str | None:
    """Cpus_allowed_list of /proc/PID/status (readable for every process); the path is
    joined as a string: this is read for every worker of every rank."""
    try:
        status = proc_files.text(f"{proc}/{pid}/status")
    except OSError:
        return None
    value = proc_files.line_value(status, "Cpus_allowed_list:")
    return (value.strip() or None) if value is not None else None


def numa_memory(pid: int, proc: Path = Path("/proc")) -> tuple[int, ...]:
    """Bytes of the process's memory on each NUMA node (index = node), from numa_maps
    (its owner or root only); () where not readable."""
    per_node: dict[int, int] = {}
    try:
        maps, _cut = proc_files.lines(
            proc / str(pid) / "numa_maps", proc_files.MAX_MAPS_BYTES, proc_files.MAX_MAPS_LINES
        )
    except OSError:
        return ()
    for line in maps:
        page = _PAGE_KB.search(line)
        size = int(page.group(1)) * 1024 if page else 4096
        for node, pages in _NUMA_NODE.findall(line):
            per_node[int(node)] = per_node.get(int(node), 0) + int(pages) * size
    if not per_node:
        return ()
    return tuple(per_node.get(n, 0) for n in range(max(per_node) + 1))


def nodes_of(cpus: set[int], nodes: dict[int, set[int]]) -> tuple[int, ...]:
    return tuple(sorted(n for n, members in nodes.items() if cpus & members))
