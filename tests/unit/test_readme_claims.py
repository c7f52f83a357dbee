"""What the README says of the command line, held to the parser: every option a command's
row shows is one that command takes, and every "works with" and "takes `--demo`" names
exactly the commands that take the option (issue 50: "every command takes --demo" while
report, replay and completion refused it). The key table is held to the bindings in
test_key_table.py."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gputui.cli.parser import COMMANDS, build_parser

README = Path(__file__).resolve().parents[2] / "README.md"
MONITOR = "the monitor"  # the command line without a command: the live screen
#: an option as a row writes it: --flag or -o, not a negative number or a placeholder
OPTION = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    found = {MONITOR: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


PARSERS = _parsers()


def _takes(command: str, option: str) -> bool:
    return option in PARSERS[command]._option_string_actions


def _commands_table() -> list[tuple[str, str]]:
    """The "## Commands" table's rows: (first cell, second cell)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Commands") :]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
            rows.append((cells[0], cells[1]))
    return rows


def _spans(cell: str) -> list[str]:
    return [s.replace("\\|", "|") for s in re.findall(r"`([^`]+)`", cell)]


def _named(text: str) -> set[str]:
    """The commands a phrase names: its backticked words that are commands, and "the
    monitor"."""
    named = {w for w in re.findall(r"`([a-z]+)`", text) if w in COMMANDS}
    return named | ({MONITOR} if MONITOR in text else set())


def test_the_table_has_a_row_for_every_command() -> None:
    shown = {span.split()[1] for cell, _ in _commands_table() for span in _spans(cell)
             if span.startswith("gputui ") and span.split()[1] in COMMANDS}  # fmt: skip
    assert shown == set(COMMANDS)


@pytest.mark.parametrize("row", _commands_table(), ids=lambda row: row[0][:40])
def test_every_option_a_row_shows_is_one_its_command_takes(row: tuple[str, str]) -> None:
    cell, _ = row
    for span in _spans(cell):
        words = span.split()
        if words[0] == "gputui":
            command = words[1] if len(words) > 1 and words[1] in COMMANDS else MONITOR
        elif words[0].startswith("--"):
            command = MONITOR  # an option of its own row: the command line's, before any
        else:
            continue
        for option in OPTION.findall(span):
            assert _takes(command, option), f"README: `{span}`, but {command} has no {option}"


@pytest.mark.parametrize(
    "row",
    [row for row in _commands_table() if "works with" in row[1]],
    ids=lambda row: row[0][:30],
)
def test_works_with_names_exactly_the_commands_that_take_the_option(
    row: tuple[str, str],
) -> None:
    cell, said = row
    option = OPTION.findall(_spans(cell)[0])[0]
    claim = said[said.index("works with") :].split(";")[0].split(". ")[0]
    takes = {command for command in PARSERS if _takes(command, option)}
    assert _named(claim) == takes, f"README says {option} {claim!r}; it is taken by {takes}"


def test_the_commands_that_take_demo_are_the_ones_the_readme_names() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())
    claim = re.search(r"Every command that reads GPUs takes `--demo`: ([^.]*)\.", text)
    assert claim is not None, "the README says which commands take --demo"
    takers, _, others = claim.group(1).partition("(")
    takes = {command for command in PARSERS if _takes(command, "--demo")}
    assert _named(takers) == takes
    assert _named(others) == set(PARSERS) - takes  # and why the rest do not


@pytest.mark.parametrize("option", ["--only", "--readonly", "--theme", "--snapshot-dir"])
def test_the_monitors_own_options_have_a_row(option: str) -> None:
    rows = [cell for cell, _ in _commands_table() if cell.startswith(f"`{option}")]
    assert rows and _takes(MONITOR, option)


def test_what_shows_under_the_process_table_is_what_the_readme_and_help_say() -> None:
    """A command line longer than the screen is cut under the table (issue 50: the README
    and the help said its whole line showed there); they say as much as the width holds,
    and where all of it is (i)."""
    from gputui.core.config import Thresholds
    from gputui.core.model import ProcessSample
    from gputui.ui.keys import DESCRIPTIONS, legend_lines
    from gputui.view.cells import plain_lines
    from gputui.view.process_table import ProcessChoices
    from gputui.view.processes import processes

    command = "python3 train.py " + " ".join(f"--option-{i} value-{i}" for i in range(20))
    proc = ProcessSample(pid=42, gpu_index=0, command=command, user="ana")
    panel = processes([proc], [], 0, ProcessChoices(pid=42), None, 158, 8, Thresholds())
    under = plain_lines(panel, 158)[2]
    assert under.startswith("▸ python3 train.py") and under.endswith("…")
    said = [README.read_text(encoding="utf-8"), DESCRIPTIONS["process"], *legend_lines()]
    for text in said:
        flat = " ".join(text.split())
        assert "whole command line shows" not in flat and "the whole line shows" not in flat
    assert "as much as the width holds (i: all of it)" in DESCRIPTIONS["process"]
