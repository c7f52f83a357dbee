"""Another process's /proc files, read within bounds: so many bytes, lines or entries.

What a /proc file holds is the process's to make: a job in a mount namespace of its own
(``unshare -Urm``, no privilege needed) can mount until its mountinfo is 137 MB, which
every gputui watching it read whole every 10 s (5.4 s and 420 MB each time); a process
can map hundreds of thousands of regions, open a million files, carry megabytes of
arguments and environment. Every read of such a file goes through here, with the bound of
what gputui needs of it; what lies past is not read, and the caller says so where it
matters. The kernel makes these files as they are read, so a read that stops early costs
only what it read.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import stat
from collections.abc import Iterator, Sequence
from typing import Final

#: a mount table: a container has tens of mounts, a Kubernetes node's host a few thousand
MAX_MOUNTINFO_BYTES: Final = 1 << 20
MAX_MOUNTINFO_LINES: Final = 8192
#: memory maps (maps, numa_maps): a training process maps a few thousand regions
MAX_MAPS_BYTES: Final = 4 << 20
MAX_MAPS_LINES: Final = 32768
#: the short files: status, limits, cgroup, a cgroup's own files
MAX_SMALL_BYTES: Final = 64 << 10
#: arguments and environment (the kernel allows up to 6 MB of them together): a command
#: line is shown cut at 4,096 characters, an environment is read for a few variables
MAX_ARGUMENTS_BYTES: Final = 64 << 10
MAX_ENVIRONMENT_BYTES: Final = 1 << 20
#: open files looked at in a process's fd folder
MAX_DESCRIPTORS: Final = 65536
_PIECE: Final = 64 << 10
#: an argument shown as it is: no space, quote or backslash in it
_PLAIN: Final = re.compile(r"[^\s'\"\\]+")


def head(path: str | os.PathLike[str], most: int) -> tuple[bytes, bool]:
    """Up to ``most`` bytes of the file, and whether it holds more (cut). OSError as
    ``open`` and ``read`` raise it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pieces: list[bytes] = []
        size = 0
        while size < most:
            piece = os.read(fd, min(_PIECE, most - size))
            if not piece:
                return b"".join(pieces), False
            pieces.append(piece)
            size += len(piece)
        return b"".join(pieces), bool(os.read(fd, 1))
    finally:
        os.close(fd)


def regular_head(path: str | os.PathLike[str], most: int) -> bytes:
    """Up to ``most`` bytes of a regular file a process named (a library it mapped, a file
    beside it): never a FIFO that would block or a device that never ends. OSError where
    it is none, or cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.fsdecode(path)}: not a regular file")
        return os.read(fd, most)
    finally:
        os.close(fd)


def text(path: str | os.PathLike[str], most: int = MAX_SMALL_BYTES) -> str:
    """A short file's text (ASCII, anything else replaced), at most ``most`` bytes of it."""
    return head(path, most)[0].decode("ascii", "replace")


def lines(
    path: str | os.PathLike[str], most_bytes: int, most_lines: int
) -> tuple[Iterator[str], bool]:
    """The file's first lines (text, undecodable bytes replaced), at most ``most_lines``
    of them in at most ``most_bytes``, each decoded as it is taken; and whether the file
    holds more (a line cut at the byte bound is left out)."""
    data, cut = head(path, most_bytes)
    end = data.rfind(b"\n") + 1 if cut else len(data)  # a line cut inside: left out
    return _lines_of(data, end, most_lines), cut or data.count(b"\n", 0, end) > most_lines


def _lines_of(data: bytes, end: int, most: int) -> Iterator[str]:
    """The lines of ``data[:end]``, at most ``most``, each decoded as it is taken."""
    start = 0
    for _ in range(most):
        if start >= end:
            return
        stop = data.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        yield data[start:stop].decode("utf-8", "replace")
        start = stop + 1


def line_value(text: str, name: str) -> str | None:
    """The rest of the line that begins with ``name`` in a short file's text (status,
    limits: "VmSwap:", "Max open files"), or None where no line does. Found by one search:
    splitting the ~60 lines of a status file for one of them cost five times the read, and
    a job's every worker is looked up so."""
    if text.startswith(name):
        start = len(name)
    else:
        at = text.find("\n" + name)
        if at < 0:
            return None
        start = at + 1 + len(name)
    end = text.find("\n", start)
    return text[start:] if end < 0 else text[start:end]


def entries(folder: str | os.PathLike[str], most: int = MAX_DESCRIPTORS) -> list[str]:
    """Up to ``most`` names in a folder (an fd folder's descriptors), read no further.
    OSError as ``scandir`` raises it."""
    with os.scandir(folder) as found:
        return [entry.name for entry in itertools.islice(found, most)]


def count(folder: str | os.PathLike[str], most: int) -> int:
    """How many names a folder holds, counted up to ``most`` at the most."""
    with os.scandir(folder) as found:
        return sum(1 for _ in itertools.islice(found, most))


def arguments(pid: int, proc: str = "/proc") -> list[str] | None:
    """A process's command line as its arguments (the first ``MAX_ARGUMENTS_BYTES``),
    undecodable bytes kept as surrogates as psutil keeps them; None where it cannot be
    read. A process that rewrote its title with spaces for separators is split at them."""
    try:
        data, _cut = head(f"{proc}/{pid}/cmdline", MAX_ARGUMENTS_BYTES)
    except OSError:
        return None
    raw = os.fsdecode(data)
    if not raw:
        return []
    separator = "\0" if "\0" in raw else " "
    parts = raw.removesuffix(separator).split(separator)
    if separator == "\0" and len(parts) == 1 and " " in parts[0]:
        parts = parts[0].split(" ")  # a retitled process (setproctitle) keeps one string
    return parts


def command_line(parts: Sequence[str]) -> str:
    """Arguments as one line: one that holds a space, a quote or a backslash (or nothing)
    quoted as a shell reads it, so that it reads back whole: a value of several words
    after ``--password`` is masked whole (``core/sanitize.mask_secrets``), not its first
    word alone, and a line copied from the screen runs as the process was run."""
    return " ".join(p if _PLAIN.fullmatch(p) else shlex.quote(p) for p in parts)


def environment(pid: int, proc: str = "/proc") -> list[tuple[str, str]]:
    """A process's environment variables (the first ``MAX_ENVIRONMENT_BYTES``), in order.
    OSError where it cannot be read (PermissionError: another user's process)."""
    data, cut = head(f"{proc}/{pid}/environ", MAX_ENVIRONMENT_BYTES)
    items = data.split(b"\0")
    if cut:
        items.pop()  # the last one, cut short
    out = []
    for item in items:
        name, sep, value = item.partition(b"=")
        if sep:
            out.append((os.fsdecode(name), os.fsdecode(value)))
    return out
