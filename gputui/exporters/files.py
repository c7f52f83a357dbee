"""Writing files so that a reader never sees half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: str | bytes, mode: int = 0o600) -> Path:
    """Write via a temporary file in the same directory, then rename over ``path``.

    Mode 0600 by default: snapshots hold command lines, which can hold secrets.
    On any error the temporary file is removed and the error propagates.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory")
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
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
