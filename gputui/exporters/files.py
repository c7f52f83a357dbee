"""Writing files so that a reader never sees half of one, and never through a stranger's link.

Files gputui writes can hold command lines (which can hold secrets): mode 0600, created
by gputui itself. A symbolic link at the target is never followed: another user on a
shared machine could point it at a file of yours.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from pathlib import Path

# Temporary files are named so that a later write can find the ones a killed gputui left.
_TMP_MARK = ".gputui-tmp-"


def open_private(path: Path) -> io.BufferedWriter:
    """Create or truncate ``path`` for writing, mode 0600; refuse a symbolic link there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if path.is_symlink():
            raise OSError(exc.errno, f"{path} is a symbolic link: not written through") from exc
        raise
    try:
        os.fchmod(fd, 0o600)  # an existing file keeps its mode on O_TRUNC
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _remove_leftovers(target: Path) -> None:
    """Temporary files of this target whose writer is gone (killed mid-write)."""
    prefix = f".{target.name}{_TMP_MARK}"
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent or "."):
            if not entry.name.startswith(prefix) or not entry.is_file(follow_symlinks=False):
                continue
            pid = entry.name[len(prefix) :].split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_atomic(path: str | os.PathLike[str], data: str | bytes, mode: int = 0o600) -> Path:
    """Write via a new temporary file in the same directory, then rename over ``path``.

    The temporary file is created with O_EXCL and O_NOFOLLOW (never an existing file or a
    link), mode 0600; the rename replaces a link at ``path`` instead of writing through
    it. On any error the temporary file is removed and the error propagates; one left by a
    writer killed outright is removed by the next write to the same target.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory")
    payload = data.encode() if isinstance(data, str) else data
    _remove_leftovers(target)
    tmp = target.with_name(f".{target.name}{_TMP_MARK}{os.getpid()}.{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
