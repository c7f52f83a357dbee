"""/dev/shm as a job sees it: PyTorch's DataLoader workers hand every batch to the training
process through shared memory there, and a container's default of 64 MB makes them fail
("Bus error", "No space left on device") or fall back to slower paths.

Read in the job's own mount namespace: its mountinfo (world-readable) names the mount
and its size option; /proc/PID/root/dev/shm (its owner or root) gives the size and use.
The job controls both: its mount table is read only so far (``proc_files``), and the
filesystem it mounted there must answer within a deadline (``deadline``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gputui.core.records import frozen
from gputui.sources.cgroups import mount_table, visible_mount
from gputui.sources.deadline import STATVFS_DEADLINE_S, NoAnswer, within

SHM = "/dev/shm"
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@frozen
class ShmReading:
    size: int | None = None
    used: int | None = None
    #: "tmpfs size=65536k" as the job's mountinfo says; "" /dev/shm is no mount of its own
    mount: str | None = None
    unreadable: str | None = None  # why size or use could not be read


def tmpfs_size(options: str) -> int | None:
    """The size= option of a tmpfs mount in bytes ("size=65536k"); None without one, or a
    size given as a share of memory ("size=50%")."""
    for option in options.split(","):
        name, _, value = option.partition("=")
        if name != "size" or not value:
            continue
        unit = _UNITS.get(value[-1].lower(), 1)
        number = value[:-1] if value[-1].lower() in _UNITS else value
        if number.isdigit():
            return int(number) * unit
    return None


def read_shm(
    pid: int | str,
    proc: Path = Path("/proc"),
    statvfs: Callable[[Path], os.statvfs_result] | None = None,
) -> ShmReading:
    """/dev/shm of ``pid``'s mount namespace ("self" for gputui's own): its mount as far
    as a mount table is read (``proc_files``; past it, unknown), its size and use from a
    ``statvfs`` that must answer within ``STATVFS_DEADLINE_S`` (``sources/deadline``)."""
    base = proc / str(pid)
    mount_text: str | None = None
    size: int | None = None
    try:
        mounts, cut = mount_table(pid, proc)
    except OSError:
        mounts, cut = [], False
    found = None if cut else visible_mount(mounts, SHM)  # a later line may cover it
    if found is not None:
        size = tmpfs_size(found.options)
        size_option = next((o for o in found.options.split(",") if o.startswith("size=")), "")
        mount_text = f"{found.fstype} {size_option}".strip()
    elif mounts and not cut:
        mount_text = ""
    where = base / "root" / SHM.lstrip("/")
    try:
        asked = statvfs or os.statvfs  # looked up when called: a test may stand in for it
        stat = within(str(where), lambda: asked(where), STATVFS_DEADLINE_S)
    except FileNotFoundError:
        return ShmReading(None, None, mount_text, f"{SHM} does not exist in its mount namespace")
    except NoAnswer as exc:
        return ShmReading(size, None, mount_text, f"{where}: its filesystem gives {exc}")
    except OSError as exc:
        why = f"{base / 'root'}: {exc.strerror or type(exc).__name__}"
        return ShmReading(size, None, mount_text, why)
    total = stat.f_blocks * stat.f_frsize
    return ShmReading(total, (stat.f_blocks - stat.f_bfree) * stat.f_frsize, mount_text)
