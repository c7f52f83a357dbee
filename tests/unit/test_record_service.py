"""contrib/gputui-record.service, the recorder left running: its command line is one this
gputui takes, and it is set up to survive what it is there to survive (docs/record.md)."""

from __future__ import annotations

import configparser
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
