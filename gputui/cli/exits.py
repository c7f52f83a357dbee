"""gputui's exit statuses: what each means, the same for every command and the monitor."""

from __future__ import annotations

from gputui.core.prose import DOCTOR_EXITS

EXIT_NO_SOURCE = 3
#: `gputui record` could not write its file (a full disk, a file system turned read-only)
EXIT_CANNOT_WRITE = 1
#: `gputui doctor`'s exit statuses, as its --help prints them (numbers: exporters/doctor.py)
DOCTOR_EXIT_CODES = "; ".join(f"{status} {meaning}" for status, meaning in DOCTOR_EXITS)
#: a command line that cannot run as given (sysexits' EX_USAGE): never one of doctor's
#: verdicts, so a health gate that drains a node on 2 (critical) does not on a typo
EXIT_USAGE = 64
EXIT_NO_TERMINAL = EXIT_USAGE
EXIT_INTERNAL = 70  # EX_SOFTWARE: distinct from every status a command documents
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command its pipe's reader left
#: standard output could not be written (closed, a full disk: sysexits' EX_IOERR)
EXIT_OUTPUT = 74
