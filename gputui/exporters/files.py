"""Writing files so that a reader never sees half of one, and never through a stranger's link.

Files gputui writes can hold command lines (which can hold secrets): mode 0600, created
by gputui itself. A symbolic link at the target is never followed: another user on a
shared machine could point it at a file of yours. A stream is the exception: a device or a
FIFO at the target, or the system's own links to the standard streams (/dev/stdout,
/proc/self/fd/1), are written as they are, never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from pathlib import Path

# Temporary files are named so that a later write can find the ones a killed gputui left.
_TMP_MARK = ".gputui-tmp-"


# Links under these are the system's own (/dev/stdout, /dev/fd/N, /proc/self/fd/N): no
# other user can plant one there, and what they point at is a stream the user chose.
_SYSTEM_LINKS = ("/dev/", "/proc/")


def stream_target(path: Path) -> bool:
    """Whether ``path`` is a stream to write into as it is (a character device, a FIFO, or
    a system link to the standard streams) rather than a file to make or replace. A block
    device or a socket is neither: an error that says so."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        # the user's own (a FIFO they made, their terminal) or the system's (/dev/null):
        # a FIFO another user left in /tmp would read what gputui writes
        return st.st_uid in (os.getuid(), 0)
    if stat.S_ISLNK(st.st_mode):
        return _system_link(path)
    if stat.S_ISBLK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        raise OSError(errno.EPERM, f"{path} is a block device or a socket: not written")
    return False


def _system_link(path: Path) -> bool:
    """A link the system made (/dev/stdout, /proc/self/fd/1): under /dev or /proc, in a
    directory no other user may write. /dev/shm is world-writable: a link planted there
    is a stranger's, never followed."""
    where = os.path.abspath(path)
    if not where.startswith(_SYSTEM_LINKS):
        return False
    try:
        parent = os.stat(os.path.dirname(where))
    except OSError:
        return False
    return not parent.st_mode & stat.S_IWOTH


def open_stream(path: Path) -> io.BufferedWriter:
    """A stream (``stream_target``) opened for writing: never created, truncated or
    replaced; appended to where it leads to a file (stdout redirected with ``>>``)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND), "wb")


def open_new(path: Path, replace: bool = False) -> io.BufferedWriter:
    """A file gputui creates itself for writing, mode 0600 (a recording).

    An existing file is never truncated or written through: without ``replace`` it is an
    error that says so; with it, a regular file of one link is removed and a new one made
    in its place (a second hard link keeps its content and mode). A symbolic link is
    never followed. A stream (``stream_target``: /dev/stdout, a FIFO a reader waits on)
    is written as it is, its mode untouched."""
    if stream_target(path):
        return open_stream(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, f"{path} is a symbolic link: not written through")
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
        if not replace:
            raise FileExistsError(errno.EEXIST, f"{path} exists: --force replaces it")
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise OSError(errno.EPERM, f"{path} has other links or is no file: not replaced")
        os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _link_new(tmp: Path, target: Path) -> None:
    """``tmp`` under the name ``target``, which no one has yet: a hard link takes the name
    whole or not at all (EEXIST), where a rename would replace what is there."""
    try:
        os.link(tmp, target)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise  # EEXIST among them
        # a file system without hard links: a look, then the rename
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, f"{target} exists") from None
        os.rename(tmp, target)
        return
    os.unlink(tmp)


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


def write_atomic(
    path: str | os.PathLike[str], data: str | bytes, mode: int = 0o600, replace: bool = True
) -> Path:
    """Write via a new temporary file in the same directory, then rename over ``path``;
    without ``replace`` an existing ``path`` (a file, a link, a directory) is never
    replaced: FileExistsError, nothing written.

    The temporary file is created with O_EXCL and O_NOFOLLOW (never an existing file or a
    link), mode 0600; the rename replaces a link at ``path`` instead of writing through
    it. On any error the temporary file is removed and the error propagates; one left by a
    writer killed outright is removed by the next write to the same target. A stream
    (``stream_target``: /dev/stdout, a FIFO) is written into as it is, never replaced.
    """
    target = Path(path)
    if not replace and os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, f"{target} exists: not replaced", str(target))
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory")
    payload = data.encode() if isinstance(data, str) else data
    if stream_target(target):
        with open_stream(target) as stream:
            stream.write(payload)
        return target
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
        if replace:
            os.replace(tmp, target)
        else:
            _link_new(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
