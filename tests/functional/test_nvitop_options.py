"""What nvitop's users expect on the command line and the screen (issue 50): --only (some
GPUs), --readonly (no signals), a light theme (--theme, b), and tags; in --help, the help
screen and the commands, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli import EXIT_NO_SOURCE, EXIT_USAGE, main
from gputui.cli.opening import make_source, source_detail
from gputui.cli.parser import parse_command_line
from gputui.core.config import Config
from gputui.launch import make_app
from gputui.ui.lines import LineView
from gputui.ui.paint import theme_palette
from gputui.ui.screens import HelpScreen
from tests.conftest import DemoApp
from tests.nvml_double import driver, hgx, install


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_says_only_readonly_and_theme(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(["--help"], capsys)
    assert "--only GPUS" in text and "0,2-3" in text
    assert "--readonly" in text and "sends no signal" in text
    assert "--theme {dark,light}" in text
    for command in ("snapshot", "doctor", "record", "export"):
        assert "--only GPUS" in _help([command, "--help"], capsys), command


def test_a_snapshot_of_only_some_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["snapshot", "--demo", "mix", "--gpus", "4", "--only", "1,3", "--samples", "2"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert [d["index"] for d in document["devices"]] == [1, 3]
    assert {g["index"] for g in document["latest"]["gpus"]} == {1, 3}
    assert {p["gpu_index"] for p in document["latest"]["processes"]} <= {1, 3}
    assert {f["gpu"] for f in document["findings"]} <= {1, 3, None}
    assert any(f["gpu"] == 1 and f["rule"] == "thermal-throttle" for f in document["findings"])
    assert document["source"]["detail"].endswith("only GPUs 1, 3")


def test_doctor_on_one_gpu_of_a_node(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, driver(550, hgx(4)))
    status = main(["doctor", "--only", "2", "--duration", "0", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert [d["index"] for d in document["devices"]] == [2]
    assert status == document["exit_status"]


def test_only_a_gpu_the_node_lacks_says_which_it_has(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install(monkeypatch, driver(550, hgx(4)))
    assert main(["snapshot", "--only", "1,9"]) == EXIT_NO_SOURCE
    assert "--only: this node has no GPU 9 (it has GPUs 0-3)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["snapshot", "--only", "one"])
    assert exited.value.code == EXIT_USAGE
    assert "'one' is not a GPU index" in capsys.readouterr().err


async def test_the_monitor_of_only_some_gpus(tmp_path: Path) -> None:
    """The same source the command line builds (the demo's history and all), narrowed."""
    args = parse_command_line(["--demo", "--gpus", "4", "--only", "1,3"])[0]
    args.interval = 1.0
    source = make_source(args)
    devices = source.open()
    history = source.backfill()  # type: ignore[attr-defined]
    assert [d.index for d in devices] == [1, 3] and history
    app = make_app(
        source,
        devices,
        Config(),
        snapshot_dir=tmp_path,
        live=False,
        ascii=False,
        detail=source_detail(args),
        history=history,
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        gpus = app.query_one("#gpus", LineView).plain.splitlines()
        indices = [row.split()[0].lstrip("▶") for row in gpus if "H100" in row or "A100" in row]
        assert indices == ["1", "3"], gpus
        header = app.query_one("#header", LineView).plain
        assert "2 GPUs" in header
        await pilot.press("2")  # no GPU 2 here: the selection stays
        assert app.selected == 1
    source.close()


async def test_the_help_screen_says_tags_the_theme_and_the_options(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        rows = dict(screen.rows)
        assert "tag the selected process" in rows["Space"]
        assert "light theme" in rows["b"]
        text = " ".join(screen.plain.split())
        for said in ("--only 0,2-3", "--readonly", "--theme light", "every tagged one"):
            assert said in text, said


async def test_the_light_theme_from_the_start_and_b_switches(demo_app: DemoApp) -> None:
    app = demo_app(None, 4, theme="light")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.theme == "textual-light" and not app.current_theme.dark
        light = theme_palette(app.get_css_variables(), False)
        assert app.palette == light
        await pilot.press("b")
        await pilot.pause()
        assert app.theme == "textual-dark"
        dark = theme_palette(app.get_css_variables(), False)
        assert app.palette == dark and dark != light  # the panels took the theme's colours
        await pilot.press("b")
        assert app.theme == "textual-light"


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
async def test_a_readonly_screen_says_so_at_every_width(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    args = parse_command_line(["--demo", "--gpus", "8", "--readonly"])[0]
    assert args.readonly
    source = make_source(args)
    app = make_app(
        source, source.open(), Config(), live=False, detail=source_detail(args), readonly=True
    )
    app.monitor.ingest(source.read())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert " read-only " in app.query_one("#header", LineView).plain
    source.close()
