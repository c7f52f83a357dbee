"""docs/security.md's table of bounds stays true: every row is an input this test knows,
every number it states is the code's constant, and every test it names exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "security.md"

#: row (its first cell) -> {constant: the words that state it in the row's bound}
CONSTANTS: dict[str, dict[str, str]] = {
    "GPU text from NVML (name, UUID, VBIOS, driver)": {
        "gputui.core.sanitize.MAX_TEXT": "16,384 characters",
    },
    "GPU readings from NVML": {},
    "Xid events from NVML": {
        "gputui.sources.nvml.source.MAX_EVENTS_PER_READ": "64 read a tick",
        "gputui.sampling.history.MAX_XIDS": "latest 8",
    },
    "a process's command line (`/proc`)": {
        "gputui.sources.host.MAX_COMMAND_CHARS": "4,096 characters",
    },
    "a process page (`/proc`: environment, children, descriptors)": {
        "gputui.sources.process_access.MAX_ENVIRONMENT": "512 environment variables",
        "gputui.core.sanitize.MAX_TEXT": "16,384 characters",
        "gputui.sources.process_access.MAX_CHILDREN": "64 children",
        "gputui.sources.process_access.MAX_DESCRIPTORS": "65,536 descriptors",
    },
    "another process's `/proc` files (mount table, memory maps, command line, environment, "
    "status, limits, cgroup, open files)": {
        "gputui.sources.proc_files.MAX_MOUNTINFO_BYTES": "a mount table 1 MiB",
        "gputui.sources.proc_files.MAX_MOUNTINFO_LINES": "8,192 lines",
        "gputui.sources.proc_files.MAX_MAPS_BYTES": "memory maps 4 MiB",
        "gputui.sources.proc_files.MAX_MAPS_LINES": "32,768 lines",
        "gputui.sources.proc_files.MAX_SMALL_BYTES": "a cgroup's files 64 KiB",
        "gputui.sources.proc_files.MAX_ARGUMENTS_BYTES": "a command line 64 KiB",
        "gputui.sources.proc_files.MAX_ENVIRONMENT_BYTES": "an environment 1 MiB",
        "gputui.sources.proc_files.MAX_DESCRIPTORS": "65,536 open files",
        "gputui.sources.host_settings.MAX_OPEN_FILES": "at most 1,048,576",
    },
    "calls that can block in the kernel on a job's filesystem (`statvfs` of its /dev/shm)": {
        "gputui.sources.deadline.STATVFS_DEADLINE_S": "answered within 0.5 s",
        "gputui.sources.deadline.MAX_STUCK": "at most 64",
    },
    "a remote page (`--source`)": {
        "gputui.sources.fetching.MAX_BYTES": "10 MiB",
        "gputui.sources.exposition.MAX_LINE_CHARS": "line at most 64 KiB",
        "gputui.sources.remote.MAX_SERIES": "200,000 series",
        "gputui.sources.remote.MAX_GPUS_PER_NODE": "256 GPUs a node",
        "gputui.sources.remote.MAX_MIG_PER_GPU": "64 MIG instances",
        "gputui.sources.remote.MAX_LABEL_CHARS": "1,024 characters",
    },
    "a Prometheus server's answer (`--prometheus`)": {
        "gputui.sources.fetching.MAX_BYTES": "10 MiB",
        "gputui.sources.prometheus.wire.MAX_SERIES": "200,000 series",
        "gputui.sources.prometheus.wire.MAX_LABELS": "64 labels",
        "gputui.sources.prometheus.nodes.MAX_NODES": "4,096 nodes",
        "gputui.sources.prometheus.nodes.MAX_CLUSTER_GPUS": "32,768 GPUs",
        "gputui.sources.prometheus.nodes.MAX_SERIES_PER_NODE": "16,384 series",
        "gputui.sources.remote.MAX_GPUS_PER_NODE": "256 GPUs a node",
        "gputui.sources.prometheus.wire.MAX_TOKEN_BYTES": "at most 16 KiB",
    },
    "a redirect": {"gputui.sources.fetching.MAX_REDIRECTS": "at most 2 in a row"},
    "duplicate series": {},
    "a recording (`replay`, `report`)": {
        "gputui.formats.recording.MAX_LINE_BYTES": "16 MiB",
        "gputui.formats.blocks.MAX_BLOCK_TICKS": "at most 3,600 ticks",
        "gputui.formats.columns.MAX_BLOB_BYTES": "at most 64 MiB",
        "gputui.formats.values.MAX_GPUS": "1,024 GPUs",
        "gputui.formats.values.MAX_PROCESSES": "65,536 processes",
        "gputui.formats.recording.MAX_TICKS": "500,000 ticks",
        "gputui.cli.report.REPORT_MAX_TICKS": "5,000,000 for a report",
        "gputui.formats.values.MAX_INT": "below 2^64",
        "gputui.formats.values.MAX_FLOAT": "below 1e18",
        "gputui.formats.recording.MAX_INTERVAL_S": "at most 3,600 s",
        "gputui.formats.journal.MAX_JOURNAL_BYTES": "a journal (`FILE.journal`) of at most 64 MiB",
    },
    "what a recording expands to (`replay`, `report`, a journal)": {
        "gputui.formats.cells.MAX_BLOCK_CELLS": "a block at most 524,288",
        "gputui.formats.cells.MAX_BLOCK_WIDTH": "a tick at most 32,768",
        "gputui.formats.cells.MAX_LINE_VALUES": "a line at most 262,144",
        "gputui.formats.journal.MAX_JOURNAL_VALUES": "at most 1,048,576 JSON values in all",
        "gputui.formats.cells.MAX_READ_CELLS": "a replay at most 67,108,864",
        "gputui.formats.cells.REPORT_MAX_CELLS": "a report 536,870,912",
    },
    "the exporter's clients (`export`)": {
        "gputui.exporters.prometheus.HEADER_TIMEOUT_S": "2 s to send",
        "gputui.exporters.prometheus.MAX_PENDING": "128 such",
        "gputui.exporters.prometheus.MAX_CONNECTIONS": "32 requests",
        "gputui.exporters.prometheus.REQUEST_TIMEOUT_S": "within 10 s",
    },
    "numbers on the command line": {
        "gputui.core.config.MIN_INTERVAL_S": "`--interval` 0.25",
        "gputui.core.config.MAX_INTERVAL_S": "0.25 to 60 s",
        "gputui.sources.simulated.MAX_GPUS": "`--gpus` 1 to 64",
        "gputui.cli.parser.MAX_SAMPLES": "`--samples` 1 to 86,400",
        "gputui.cli.parser.MAX_SAMPLING_S": "at most 86,400 s",
        "gputui.cli.parser.MAX_WARMUP_S": "`--warmup` at most 3,600 s",
        "gputui.cli.parser.MAX_ROTATE_MB": "`--rotate-mb` at most 1,000,000",
        "gputui.cli.parser.MAX_KEEP": "`--keep` 1 to 1,000",
        "gputui.core.config.MAX_RECORD_SYNC_S": "`record --sync` 0 to 3,600",
        "gputui.core.config.MAX_BLOCK_TICKS": "`--block` 1 to 3,600",
        "gputui.core.config.MIN_SPEED": "`replay --speed` 0.125",
        "gputui.core.config.MAX_SPEED": "0.125 to 64",
        "gputui.cli.parser.MAX_REPORT_DEADLINE_S": "`report --deadline` 1 to 86,400",
    },
    "keys typed in the app": {
        "gputui.view.process_table.FILTER_MAX_CHARS": "at most 200 characters",
    },
    "signals to gputui": {},
    "files gputui writes (`record -o`, `snapshot -o`, the `s` key)": {},
}

UNITS = {"MiB": 2**20, "KiB": 2**10}
NUMBER = re.compile(r"(\d+)\^(\d+)|(\d[\d,]*(?:\.\d+)?(?:e\d+)?)(?:\s*(MiB|KiB))?")


def _table() -> list[list[str]]:
    text = DOC.read_text()
    section = text[text.index("## Bounds on every input") :]
    section = section[: section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
    return [c for c in cells[1:] if not set(c[0]) <= {"-"}]


def _stated(words: str) -> float:
    """The last number in ``words``, in the unit written after it."""
    *_, last = NUMBER.finditer(words)
    if last.group(1):
        return float(int(last.group(1)) ** int(last.group(2)))
    return float(last.group(3).replace(",", "")) * UNITS.get(last.group(4) or "", 1)


def _constant(path: str) -> float:
    module, name = path.rsplit(".", 1)
    return float(getattr(importlib.import_module(module), name))


def _test_names() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        names.update(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(), re.M))
    return names


def test_every_row_is_an_input_this_test_knows_and_has_four_cells() -> None:
    table = _table()
    assert all(len(row) == 4 for row in table), [row[0] for row in table if len(row) != 4]
    assert [row[0] for row in table] == list(CONSTANTS)


def test_every_number_the_table_states_is_the_codes() -> None:
    for row in _table():
        for path, words in CONSTANTS[row[0]].items():
            assert words in row[1], (row[0], words)
            assert _stated(words) == _constant(path), (row[0], path, words, _constant(path))


def test_every_test_the_table_names_exists() -> None:
    known = _test_names()
    for row in _table():
        named = re.findall(r"`(test_\w+)`", row[3])
        assert named, f"{row[0]}: no test holds it"
        assert not set(named) - known, (row[0], set(named) - known)


def _masking_table() -> list[tuple[str, str, str]]:
    text = DOC.read_text()
    section = text[text.index("## Secrets") :]
    section = section[: section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    out = []
    for row in rows[1:]:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        if set(cells[0]) <= {"-"}:
            continue
        assert len(cells) == 3, row
        ran, left = (re.fullmatch(r"`([^`]+)`", c) for c in cells[1:])
        assert ran is not None and left is not None, row
        out.append((cells[0], ran[1], left[1]))
    return out


def test_every_form_the_secrets_table_shows_is_masked_as_it_says() -> None:
    from gputui.core.sanitize import mask_secrets

    table = _masking_table()
    assert len(table) >= 20
    for form, ran, left in table:
        assert mask_secrets(ran) == left, (form, ran, mask_secrets(ran))
        assert mask_secrets(left) == left, (form, "masking twice changes it")
