"""A recording its recorder left unfinished (killed, the machine lost its power) made whole
by the recorder that starts after it, before it rotates it away (``gputui record
--rotate-mb``, a service restarted): the ticks of its journal folded in as its last
block, as a write-ahead log is replayed after a crash (docs/record.md).

The journal's mark says how many bytes of the file held whole blocks when the journal
began, and for gzip what the stream held there; the journal holds every tick of the file
past that point (a recorder syncs the journal before it writes a block). So the file is
cut there, the journal's ticks written as block lines, a gzip stream ended with them
(``durable.finished_member``), the file synced and the journal removed: the file then
reads back whole by itself, a copy of it included.
"""

from __future__ import annotations

import os
from pathlib import Path

from gputui.core.units import fmt_time
from gputui.exporters.durable import AppendFile, finished_member, sync_directory
from gputui.formats.block_writer import block_lines
from gputui.formats.blocks import parse_block
from gputui.formats.journal import journal_of, read_journal
from gputui.formats.recording import MAX_LINE_BYTES, read_header
from gputui.formats.values import FormatError


def fold_journal(path: Path) -> list[str]:
    """The journal of the recording at ``path`` folded into it, and removed; what to tell
    the user (nothing where it has no journal). A journal that is not this file's, or
    holds no tick, is removed; one whose ticks cannot be read, or a file shorter than
    its mark says, is left as it is (a notice says so). Raises OSError where the file
    cannot be written (a full disk), RecordingError where it is no recording."""
    header = read_header(path)
    journal_path = journal_of(path)
    if not os.path.lexists(journal_path):
        return []
    notices: list[str] = []
    journal = read_journal(path, header.run, notices) if header.run else None
    if journal is None or journal.block is None:
        os.unlink(journal_path)
        return [*notices, f"{journal_path}: no tick of {path} in it: removed"]
    try:
        pairs, _skipped = parse_block(journal.block)
    except (FormatError, KeyError, TypeError, ValueError, RecursionError) as exc:
        return [f"{journal_path}: its ticks cannot be read ({exc}): left as it is"]
    mark = journal.mark
    if os.stat(path).st_size < mark.at:
        return [f"{path}: shorter than its journal says it was: left as it is"]
    data = b"".join(line for line, _n in block_lines(pairs, True, MAX_LINE_BYTES))
    if mark.crc is not None and mark.size is not None:
        data = finished_member(data, mark.crc, mark.size)
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
    file = AppendFile(os.fdopen(fd, "wb"), path)
    try:
        file.truncate(mark.at)
        file.append(data)
        file.sync()
    finally:
        file.close()
    os.unlink(journal_path)
    sync_directory(path)
    first, last = fmt_time(pairs[0][0].time), fmt_time(pairs[-1][0].time)
    return [
        *notices,
        f"{path}: its last {len(pairs)} tick(s), {first} to {last}, taken from its journal "
        "into it (its recorder stopped before it closed their block)",
    ]
