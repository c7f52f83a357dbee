"""The command line: snapshot, the missing-driver message, version."""

from __future__ import annotations

import gc
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputui import __version__
from gputui.cli import EXIT_NO_SOURCE, EXIT_USAGE, main
from gputui.cli.exits import EXIT_OUTPUT
from gputui.cli.parser import build_parser, parse_command_line
from gputui.formats.snapshot import parse_snapshot
from tests.nvml_double import install


def test_snapshot_demo_prints_the_full_json_state(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["snapshot", "--demo"]) == 0
    snap = parse_snapshot(capsys.readouterr().out)
    assert snap.source.label == "SIMULATED"
    assert len(snap.devices) == 4 and snap.latest is not None
    assert len(snap.latest.gpus) == 4 and snap.latest.host is not None
    assert len(snap.history_times) >= 100  # the warm-up history
    assert {p.gpu_index for p in snap.latest.processes} == {0, 1, 2, 3}


def test_demo_before_the_command_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--demo", "snapshot", "--gpus", "2"]) == 0
    assert len(json.loads(capsys.readouterr().out)["devices"]) == 2


def test_snapshot_markdown_file_is_private(tmp_path: Path) -> None:
    out = tmp_path / "state.md"
    assert main(["snapshot", "--demo", "thermal", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# gputui snapshot") and "thermal slowdown" in text
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600


def test_snapshot_into_a_directory_never_replaces_an_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o DIR: a new file named by the time, as the app's s key names its own; a second
    snapshot of the same second (held here) is another file, the first left as it was."""
    monkeypatch.setattr(
        "gputui.exporters.snapshot_files.snapshot_stem", lambda monitor: "gputui-snapshot-x"
    )
    argv = ["snapshot", "--demo", "--samples", "1", "-o", str(tmp_path)]
    assert main(argv) == 0
    first = tmp_path / "gputui-snapshot-x.json"
    was = first.read_bytes()
    assert main(argv) == 0
    assert main([*argv, "--format", "markdown"]) == 0
    err = capsys.readouterr().err
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["gputui-snapshot-x-2.json", "gputui-snapshot-x-3.md", "gputui-snapshot-x.json"]
    assert first.read_bytes() == was
    assert len(parse_snapshot((tmp_path / names[0]).read_text()).devices) == 4
    assert f"written to {tmp_path / names[1]}" in err
    assert all(stat.S_IMODE(os.stat(tmp_path / n).st_mode) == 0o600 for n in names)


def test_snapshot_to_unwritable_place_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["snapshot", "--demo", "-o", str(tmp_path / "missing" / "x.json")]) == 1
    assert "could not write" in capsys.readouterr().err


def test_no_driver_gives_one_clear_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, None)
    assert main(["snapshot"]) == EXIT_NO_SOURCE
    err = capsys.readouterr().err
    assert "No NVIDIA driver found" in err and "--demo" in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_plain_gputui_without_driver(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, None)
    assert main([]) == EXIT_NO_SOURCE
    assert "gputui --demo" in capsys.readouterr().err


def test_bad_scenario_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["snapshot", "--demo", "lava"])
    assert info.value.code == EXIT_USAGE  # never doctor's 2 (critical)
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("workers", ["-1", "--workers=-1", "1000001"])
def test_doctor_workers_outside_its_range_is_a_usage_error_that_says_the_range(
    capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    argv = [workers] if workers.startswith("--") else ["--workers", workers]
    with pytest.raises(SystemExit) as info:
        main(["doctor", "--config", "--demo", *argv])
    assert info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert "argument --workers: must be from 0 to 1,000,000" in err and "Traceback" not in err


def test_python_dash_m_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gputui", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"gputui {__version__}"


@pytest.mark.parametrize("argv", [["--demo"], ["replay", "missing.jsonl"]])
def test_an_app_starts_without_the_collector_and_gets_it_back(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cyclic collector is off while an app starts (imports and the first screen leave
    ~100,000 long-lived objects for it to walk again and again), and on again however the
    command ends: here before any app, at the missing terminal or the missing file."""
    import gputui.cli as cli

    seen: list[bool] = []
    for name in ("cmd_app", "cmd_replay"):
        real = getattr(cli, name)

        def watched(args: object, real: Any = real) -> int:
            seen.append(gc.isenabled())
            status: int = real(args)
            return status

        monkeypatch.setattr(cli, name, watched)
    assert gc.isenabled()
    assert main(argv) != 0
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("made", ["missing", "file", "read-only"])
def test_a_snapshot_dir_that_cannot_take_the_files_is_refused_at_the_start(
    made: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not when s is pressed, an hour into the run (issue 50)."""
    where = tmp_path / "snaps"
    if made == "file":
        where.write_text("")
    elif made == "read-only":
        where.mkdir(mode=0o500)
        if os.access(where, os.W_OK):
            pytest.skip("root writes in a read-only directory")
    said = {"missing": "does not exist", "file": "is not a directory", "read-only": "writable"}
    for then in (["--demo"], ["replay", str(tmp_path / "run.jsonl")]):
        with pytest.raises(SystemExit) as exited:
            main(["--snapshot-dir", str(where), *then])
        assert exited.value.code == EXIT_USAGE
        err = capsys.readouterr().err
        assert "argument --snapshot-dir" in err and said[made] in err, err


OUTPUT_COMMANDS = [
    ["completion", "bash"],
    ["snapshot", "--demo"],
    ["doctor", "--config", "--demo"],
    ["report", "{recording}", "--format", "md"],
]


@pytest.mark.parametrize("where", ["closed", "/dev/full"])
def test_output_that_cannot_be_written_is_said_with_its_own_status(
    tmp_path: Path, where: str
) -> None:
    """Issue 52: a full disk (``> /dev/full``) ended in "internal error", exit 70, and a
    closed standard output (``>&-``) wrote nothing while `completion` said 0. Each says
    the output could not be written, and exits 74 (documented, never a verdict)."""
    recording = tmp_path / "run.jsonl"
    assert main(["record", "--demo", "--duration", "2", "-o", str(recording)]) == 0
    for command in OUTPUT_COMMANDS:
        argv = [sys.executable, "-m", "gputui", *(w.format(recording=recording) for w in command)]
        if where == "closed":
            done = subprocess.run(
                ["sh", "-c", 'exec "$@" >&-', "sh", *argv], capture_output=True, timeout=60
            )
        else:
            with open("/dev/full", "w") as full:
                done = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, timeout=60)
        err = done.stderr.decode()
        assert done.returncode == EXIT_OUTPUT, (command, done.returncode, err)
        why = "standard output is closed" if where == "closed" else "No space left on device"
        assert f"gputui: the output could not be written: {why}" in err, (command, err)
        assert "internal error" not in err and "Traceback" not in err


MONITOR_LINES = [
    [],
    ["--interval", "2"],
    ["--demo"],
    ["--demo", "thermal", "--gpus", "8", "--seed", "3"],
    ["--only", "1,3", "--theme", "light", "--readonly", "--keep-secrets"],
    ["--demo=idle", "--snapshot-dir", "."],
    ["--in", "0.5"],  # an option abbreviated, as argparse allows
]


@pytest.mark.parametrize("argv", MONITOR_LINES)
def test_the_monitors_command_line_reads_as_the_whole_parser_reads_it(argv: list[str]) -> None:
    """A command line that names no command is read by the monitor's options alone (the
    commands' parsers are not made: the start waits on them); it means what it always did."""
    args, parser = parse_command_line(argv)
    assert vars(args) == vars(build_parser().parse_args(argv))
    assert args.command is None
    assert "COMMAND" not in parser.format_usage()


def test_commands_help_and_mistakes_are_the_whole_parsers_to_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, parser = parse_command_line(["--demo", "snapshot", "--samples", "1"])
    assert args.command == "snapshot" and "COMMAND" in parser.format_usage()
    with pytest.raises(SystemExit) as exited:
        parse_command_line(["--interval", "abc"])
    assert exited.value.code == EXIT_USAGE
    said = capsys.readouterr().err
    assert "COMMAND" in said and "argument --interval: 'abc' is not a number" in said
    for argv in (["-h"], ["--demo", "--he"]):  # help lists the commands, abbreviated or not
        with pytest.raises(SystemExit) as exited:
            parse_command_line(argv)
        assert exited.value.code == 0
        assert "snapshot" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:
        parse_command_line(["snapshots"])  # a command misspelt: the commands are named
    assert exited.value.code == EXIT_USAGE
    assert "invalid choice: 'snapshots'" in capsys.readouterr().err


def test_the_command_runs_with_the_collector_on_its_modules_loaded_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`gputui` and `python -m gputui` both start at gputui.__main__.run: the command
    line's modules load with the cyclic collector off, every command runs with it on."""
    import gputui.__main__ as entry
    import gputui.cli

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '\ngputui = "gputui.__main__:run"\n' in pyproject  # the console script's
    seen: list[bool] = []

    def command() -> int:
        seen.append(gc.isenabled())
        return 0

    monkeypatch.setattr(gputui.cli, "main", command)
    assert entry.run() == 0 and seen == [True]
