"""The app through Textual's pilot: every key, snapshots from the app, stale data."""

from __future__ import annotations

import gc
import json
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from gputui.core.config import Config
from gputui.core.manual_clock import ManualClock
from gputui.core.model import DeviceInfo, Frame
from gputui.core.names import SourceKind
from gputui.launch import make_app
from gputui.sources.simulated import SimulatedSource, resolve_scenarios
from gputui.ui.app import GpuTuiApp
from gputui.ui.lines import LineView
from gputui.ui.screens import FindingScreen, HelpScreen, RulesScreen
from tests.conftest import DemoApp


def text_of(app: GpuTuiApp, panel: str) -> str:
    return app.query_one(f"#{panel}", LineView).plain


async def test_gpu_switching_keys(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert app.selected == 0
        await pilot.press("right")
        assert app.selected == 1
        assert str(app.query_one("#detail").border_title).startswith("GPU 1 ")
        await pilot.press("l", "tab")
        assert app.selected == 3
        await pilot.press("left", "h", "shift+tab")
        assert app.selected == 0
        await pilot.press("left")
        assert app.selected == 7  # wraps
        await pilot.press("3")  # GPU 3: keys name GPUs as NVML numbers them, from 0
        assert app.selected == 3
        await pilot.press("9")  # there is no GPU 9 here: nothing happens
        assert app.selected == 3
        await pilot.press("0")
        await pilot.pause()
        assert app.selected == 0
        assert text_of(app, "gpus").splitlines()[1].startswith("▶0")


async def test_overview_toggle_shows_every_gpu_as_a_card(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        assert app.query_one("#overview").display and not app.query_one("#gpus").display
        overview = text_of(app, "overview")
        for i in range(8):
            assert f"╭ {i} " in overview
        assert "thermal-throttle" in overview
        await pilot.press("o")
        assert not app.query_one("#overview").display and app.query_one("#gpus").display


async def test_findings_navigation_and_jump_to_gpu(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        findings = app.monitor.findings
        assert findings[0].rule == "thermal-throttle" and findings[0].gpu == 1
        advisor = text_of(app, "advisor")
        assert "▶✖ GPU1" in advisor and "Thermal throttling" in advisor
        assert "slowdown at 89 °C" in advisor  # the selected finding's evidence
        await pilot.press("n")
        assert app.finding_index == 1
        await pilot.press("N", "g")
        assert app.selected == 1
        await pilot.press("enter")
        assert isinstance(app.screen, FindingScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, FindingScreen)


async def test_help_and_rules_screens(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("r")
        assert isinstance(app.screen, RulesScreen)
        await pilot.press("q")  # closes the screen, not the app
        assert not isinstance(app.screen, RulesScreen)
        assert app.is_running


async def test_window_and_sort_keys(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert "last 1 min," in text_of(app, "detail")
        await pilot.press("w")
        assert "last 5 min," in text_of(app, "detail")
        procs = app.query_one("#procs")
        assert "by GPU MEM" in str(procs.border_title)
        await pilot.press("t")  # the next column: SM %
        assert "by SM%" in str(procs.border_title)
        await pilot.press("C")  # by CPU at once
        assert "by CPU%" in str(procs.border_title)


async def test_snapshot_key_writes_json_markdown_and_svg(demo_app: DemoApp, tmp_path: Path) -> None:
    app = demo_app(None, 4, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("s")
        saved = [n.message for n in app._notifications if n.title == "Snapshot saved"]
        assert saved and saved[0].endswith(f" in {tmp_path.resolve()}")
        await pilot.pause()
    names = sorted(p.name.split(".", 1)[1] for p in tmp_path.iterdir())
    assert names == ["json", "md", "report.html", "svg"]
    for path in tmp_path.iterdir():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "<svg" in next(tmp_path.glob("*.svg")).read_text()
    # the report of the history the app held: its GPUs, its findings, its charts' data
    page = next(tmp_path.glob("*.report.html")).read_text()
    assert "the app&#x27;s history (SIMULATED" in page and "Where the time went" in page
    data = json.loads(page.split('id="gputui-data">', 1)[1].split("</script>", 1)[0])
    assert [g["index"] for g in data["gpus"]] == [0, 1, 2, 3]
    assert len(data["x"]) == len(app.monitor.history.times())
    assert all(g["charts"][0]["series"] for g in data["gpus"])  # utilisation was drawn


async def test_snapshot_into_unwritable_directory_keeps_running(
    demo_app: DemoApp, tmp_path: Path
) -> None:
    missing = tmp_path / "nope"
    app = demo_app(None, 2, snapshot_dir=missing)
    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("s")
        await pilot.pause()
        assert app.is_running
    assert notes and "cannot write" in notes[0]
    assert not missing.exists()


async def test_snapshot_on_full_disk_leaves_nothing(
    demo_app: DemoApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo_app(None, 2, snapshot_dir=tmp_path)
    calls = {"n": 0}
    real = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the Markdown file fails: the JSON must go too
            raise OSError(28, "No space left on device")
        real(fd)

    notes: list[str] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
        monkeypatch.setattr(os, "fsync", fsync)
        await pilot.press("s")
        await pilot.pause()
        monkeypatch.setattr(os, "fsync", real)
    assert "No space left on device" in notes[0]
    assert list(tmp_path.iterdir()) == []


async def test_snapshots_of_a_paused_screen_never_overwrite_each_other(
    demo_app: DemoApp, tmp_path: Path
) -> None:
    """Paused, the frame time (the name's) stands still, as it does within a second: each
    snapshot gets a name of its own (-2, -3...), a name any file of a snapshot has (one
    of the user's own here) is passed over, and no earlier file is touched."""
    app = demo_app(None, 2, snapshot_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("p")
        await pilot.press("s")
        await pilot.pause()
        first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
        stem = next(iter(first)).split(".", 1)[0]
        (tmp_path / f"{stem}-2.svg").write_text("the user's own")
        await pilot.press("s")
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
        saved = [n.message for n in app._notifications if n.title == "Snapshot saved"]
    assert len(saved) == 3 and saved[1].startswith(f"{stem}-3.json") and f"{stem}-4" in saved[2]
    kinds = ["json", "md", "report.html", "svg"]
    for base in (stem, f"{stem}-3", f"{stem}-4"):
        assert sorted(p.name.split(".", 1)[1] for p in tmp_path.glob(f"{base}.*")) == kinds
    assert {p.name: p.read_bytes() for p in tmp_path.glob(f"{stem}.*")} == first
    assert [p.name for p in tmp_path.glob(f"{stem}-2.*")] == [f"{stem}-2.svg"]
    assert (tmp_path / f"{stem}-2.svg").read_text() == "the user's own"


class StepSource:
    """A simulated node whose reads can be made to hang, like a wedged driver."""

    label = "SIMULATED"
    kind = SourceKind.SIMULATED

    def __init__(self) -> None:
        self.inner = SimulatedSource(resolve_scenarios("healthy", 2), clock=ManualClock(1e9))
        self.gate = threading.Event()
        self.gate.set()
        self.reads = 0

    def open(self) -> tuple[DeviceInfo, ...]:
        return self.inner.open()

    def read(self) -> Frame:
        self.gate.wait()
        self.reads += 1
        return self.inner.read()

    def close(self) -> None:
        self.gate.set()


async def test_live_keys_pause_interval_and_stale_data() -> None:
    source = StepSource()
    app = make_app(source, source.open(), Config(interval_s=0.25))
    assert app.sampler is not None
    mono = ManualClock(100.0)
    app.sampler._monotonic = mono  # the age is measured on a clock the test moves
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.6)
        assert source.reads >= 1
        await pilot.press("p")
        assert app.paused and app.sampler.paused
        app._draw_header()
        assert "PAUSED" in text_of(app, "header")
        await pilot.press("p")
        assert not app.sampler.paused
        span = app.monitor.history.capacity * app.monitor.interval_s
        await pilot.press("plus")
        assert app.sampler.interval_s == 0.5 == app.monitor.interval_s  # one owner
        # the history keeps its length in seconds: its rings follow the interval
        assert app.monitor.history.capacity * 0.5 == pytest.approx(span, abs=0.5)
        await pilot.press("minus", "minus")
        assert app.sampler.interval_s == 0.25
        assert app.monitor.history.capacity * 0.25 == pytest.approx(span, abs=0.5)
        # the driver hangs: the screen stays responsive and says how old the data is
        source.gate.clear()
        await pilot.pause(0.5)
        mono.advance(12.0)
        app._draw_header()
        header = text_of(app, "header")
        assert "STALE: no data for 12 s" in header
        await pilot.press("right")  # still responsive
        assert app.selected == 1
        source.gate.set()
    assert app.sampler.stop(timeout=1.0)


async def test_quit_key(demo_app: DemoApp) -> None:
    app = demo_app(None, 2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == 0


async def test_sixteen_gpus_at_80x24_keep_the_selection_visible(demo_app: DemoApp) -> None:
    app = demo_app(None, 16)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("left")  # to the last GPU
        await pilot.pause()
        assert app.selected == 15
        assert any(line.startswith("▶15") for line in text_of(app, "gpus").splitlines())
        await pilot.press("o")
        await pilot.pause()
        assert "╭ 15 " in text_of(app, "overview")  # the cards scroll to the selected GPU
        await pilot.press("0")
        await pilot.pause()
        assert "╭ 0 " in text_of(app, "overview")


async def test_tiny_terminal_and_back(demo_app: DemoApp) -> None:
    app = demo_app(None, 4)
    async with app.run_test(size=(20, 5)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(160, 50)
        await pilot.pause()
        assert "Util" in text_of(app, "detail")


async def test_live_header_says_simulated_and_nvml_would_not(demo_app: DemoApp) -> None:
    app = demo_app(None, 2)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "SIMULATED" in text_of(app, "header")


async def test_the_mouse_selects_gpus_and_findings(demo_app: DemoApp) -> None:
    app = demo_app(None, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        gpus = app.query_one("#gpus", LineView)
        await pilot.click(gpus, offset=(5, 1 + 1 + 3))  # border, column headers, fourth GPU
        assert app.selected == 3
        advisor = app.query_one("#advisor", LineView)
        await pilot.click(advisor, offset=(10, 1 + 1))  # the second finding
        assert app.finding_index == 1


async def test_the_startup_heap_is_frozen_only_where_the_app_owns_the_process(
    demo_app: DemoApp,
) -> None:
    gc.unfreeze()
    app = demo_app(gpus=2)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert gc.get_freeze_count() == 0  # tests run many apps: nothing kept forever
    assert sys.getswitchinterval() == pytest.approx(0.005)  # Python's, left alone
    app = demo_app(gpus=2, owns_process=True)  # as run_app makes it
    gc.disable()  # as the CLI starts it (gputui.cli._start_without_collector)
    switches: list[float] = []
    app.call_later(lambda: switches.append(sys.getswitchinterval()))  # before the first paint
    try:
        async with app.run_test() as pilot:
            await pilot.pause()
            await pilot.pause()
            assert gc.get_freeze_count() > 10_000
            assert gc.isenabled()  # on again after the first paint
            # the writer thread got the GIL sooner until the first paint, and no longer
            assert switches == [pytest.approx(0.0005)]
            assert sys.getswitchinterval() == pytest.approx(0.005)
    finally:
        gc.unfreeze()
        gc.enable()
        sys.setswitchinterval(0.005)


async def test_no_all_clear_before_every_rule_has_had_its_window(demo_app: DemoApp) -> None:
    # 12 s into a GPU heating toward throttling: the rules have not had their 30 s yet
    early = demo_app("thermal", 1, warmup_s=12)
    async with early.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        pane = text_of(early, "advisor")
        assert "still judging:" in pane and "to go, every rule needs 30 s" in pane
        assert "nothing slows" not in pane and "no all-clear before every rule has looked" in pane
    # a healthy GPU with its window behind it: now the all-clear
    judged = demo_app("healthy", 1, warmup_s=40)
    async with judged.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "✓ nothing slows these GPUs down right now" in text_of(judged, "advisor")
