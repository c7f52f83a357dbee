"""contrib/gputui-record.service, the recorder left running: its command line is one this
gputui takes, set up to survive what it is there to survive; and docs/record.md's table of
what a crash loses names tests that exist (docs/record.md)."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

from gputui.cli.parser import build_parser

UNIT = Path(__file__).resolve().parents[2] / "contrib" / "gputui-record.service"


def _service() -> configparser.SectionProxy:
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(UNIT.read_text())
    return unit["Service"]


def test_the_services_command_is_a_record_this_gputui_takes() -> None:
    command = shlex.split(_service()["ExecStart"])
    assert Path(command[0]).name == "gputui"
    args = build_parser().parse_args(command[1:])
    assert args.command == "record" and args.output.suffix == ".gz"
    # a restarted recorder rotates what the killed one left (its journal folded in):
    # without --rotate-mb it would refuse the file, with --force replace it
    assert args.rotate_mb > 0 and not args.force
    assert args.keep >= 10 and args.sync <= 10
    assert args.output.parent == Path("/var/lib/gputui")


def test_the_service_restarts_and_is_stopped_by_sigterm() -> None:
    service = _service()
    assert service["Restart"] == "always"
    assert service["KillSignal"] == "SIGTERM"  # the block closed, the file synced, exit 0
    assert int(service["TimeoutStopSec"]) >= 10
    assert service["ReadWritePaths"] == "/var/lib/gputui" == f"/var/lib/{service['StateDirectory']}"


def test_every_test_docs_record_names_for_what_a_crash_loses_exists() -> None:
    doc = (UNIT.parents[1] / "docs" / "record.md").read_text()
    table = doc[doc.index("## What a crash loses") : doc.index("## A recorder left running")]
    named = set(re.findall(r"`(test_\w+)`", table))
    known: set[str] = set()
    for path in (UNIT.parents[1] / "tests").rglob("test_*.py"):
        known.update(re.findall(r"^def (test_\w+)", path.read_text(), re.M))
    assert len(named) >= 6 and named <= known, named - known
