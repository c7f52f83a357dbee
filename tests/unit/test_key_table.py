"""The key table, pure: readable keys, one row per action, honest per mode, the README's
table equal to the bindings', and the palette's commands bound to real actions."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from textual.binding import Binding

from gputui.core.model import DeviceInfo
from gputui.launch import make_demo_app
from gputui.ui import keys
from gputui.ui.commands import palette_commands

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SCRIPT = ROOT / "scripts" / "readme_keys.py"
START, END = "<!-- keys:start -->", "<!-- keys:end -->"


def readme_table(text: str) -> str:
    start = text.index(START) + len(START)
    return text[start : text.index(END, start)].strip() + "\n"


# -- the README -------------------------------------------------------------------------


def test_the_readme_key_table_is_the_bindings_table() -> None:
    text = README.read_text(encoding="utf-8")
    keys_section = text[text.index("## Keys") :]
    keys_section = keys_section[: keys_section.index("\n## ")]
    assert START in keys_section and END in keys_section
    assert readme_table(text) == keys.markdown_key_table(), (
        "README.md's key table differs from gputui/ui/keys.py: run python scripts/readme_keys.py"
    )


def test_the_script_rewrites_only_the_table(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Keys\n\n{START}\n| old | table |\n{END}\n\nprose below\n")
    run = [sys.executable, str(SCRIPT)]
    assert subprocess.run([*run, "--check", str(readme)], capture_output=True).returncode == 1
    assert subprocess.run([*run, str(readme)], capture_output=True).returncode == 0
    text = readme.read_text()
    assert readme_table(text) == keys.markdown_key_table()
    assert text.startswith("# x\n\n## Keys\n\n") and text.endswith(f"{END}\n\nprose below\n")
    assert subprocess.run([*run, "--check", str(readme)], capture_output=True).returncode == 0
    readme.write_text("no markers\n")
    assert subprocess.run([*run, str(readme)], capture_output=True).returncode == 2


def test_the_markdown_table_has_the_live_keys_then_the_replay_keys() -> None:
    table = keys.markdown_key_table()
    live, replay = table.split("While a recording plays")
    assert "| ← → / h l / Shift+Tab Tab | previous / next GPU |" in live
    assert "| + / = |" in live and "| q / Ctrl+C | quit |" in live
    assert "| 0 … 9 | jump to GPU 0 … 9; two digits typed quickly" in live
    assert "| [ ] / { } |" not in live and "| [ ] / { } |" in replay
    assert "| + / = |" not in replay


def test_a_pipe_in_a_cell_does_not_split_the_markdown_row() -> None:
    table = keys.markdown_key_table([Binding("x", "odd", "a | b")])
    assert "| x | a \\| b |" in table


# -- readable keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("question_mark", "?"),
        ("shift+tab", "Shift+Tab"),
        ("ctrl+c", "Ctrl+C"),
        ("left", "←"),
        ("plus", "+"),
        ("equals_sign", "="),
        ("minus", "-"),
        ("full_stop", "."),
        ("left_curly_bracket", "{"),
        ("less_than_sign", "<"),
        ("enter", "Enter"),
        ("escape", "Esc"),
        ("space", "Space"),
        ("N", "N"),
        ("f1", "F1"),
    ],
)
def test_key_labels(key: str, label: str) -> None:
    assert keys.key_label(key) == label


# -- the rows -----------------------------------------------------------------------------


def test_the_rows_of_live_and_replay() -> None:
    live = dict(keys.key_rows(keys.BINDINGS, replay=False))
    replay = dict(keys.key_rows(keys.BINDINGS, replay=True))
    assert live["← → / h l / Shift+Tab Tab"] == "previous / next GPU"
    assert live["q / Ctrl+C"] == "quit"
    assert "+ / =" in live and "-" in live
    assert live["0 … 9"].startswith("jump to GPU 0 … 9; two digits typed quickly reach GPU 10")
    assert live["Home End"] == "first / last GPU"
    assert live["Ctrl+Z"].startswith("suspend gputui to the shell")
    assert sum(1 for k, _ in keys.key_rows(keys.BINDINGS, False) if k == "PgDn PgUp") == 2
    assert not {".", "[ ] / { }", "< >"} & set(live)
    assert {".", "[ ] / { }", "< >"} <= set(replay)
    assert not {"+ / =", "-"} & set(replay)
    assert all("`" not in d for d in [*live.values(), *replay.values()])  # no markup at all


@pytest.mark.parametrize("replay", [False, True])
def test_every_action_once_and_only_in_its_mode(replay: bool) -> None:
    rows = keys.help_rows(keys.BINDINGS, replay)
    shown = [a for row in rows for a in row.actions]
    assert len(shown) == len(set(shown))
    expected = {b.action for b in keys.BINDINGS if keys.in_mode(b.action, replay)}
    assert set(shown) == expected
    names = {a.split("(")[0] for a in shown}
    assert not names & set(keys.LIVE_ACTIONS if replay else keys.REPLAY_ACTIONS)


def test_an_action_without_a_description_falls_back_to_its_bindings() -> None:
    rows = keys.key_rows(
        [Binding("x", "frob(1)", "frob up"), Binding("X", "frob(-1)", "frob down")], False
    )
    assert rows == [("x X", "frob up / frob down")]
    # keys that do not pair up keep a row each
    rows = keys.key_rows([Binding("a,b", "zap(1)", "up"), Binding("c", "zap(-1)", "down")], False)
    assert rows == [("a / b", "up"), ("c", "down")]


def test_the_legend_names_every_symbol_and_column() -> None:
    text = "\n".join(keys.legend_lines())
    for term in ("✖", "▲", "●", "▶", "+N GPUs ↓", "+N findings, 1 critical", "<1 min"):
        assert term in text
    for column in ("#", "NAME", "UTIL", "VRAM", "TEMP", "POWER"):
        assert f"  {column} " in text
    for column in ("PID", "USER", "GPU MEM", "SM%", "CPU%", "RSS", "TIME", "WORKERS", "THR"):
        assert f"  {column} " in text
    assert "COMMAND" in text and "one time bucket" in text and "GIL-bound" in text


# -- the palette's commands ---------------------------------------------------------------


def test_the_palette_commands_run_bound_actions() -> None:
    devices = make_demo_app(None, 4).monitor.devices
    commands = palette_commands(devices)
    bound = {b.action for b in keys.BINDINGS}
    assert all(c.action in bound for c in commands)
    names = [c.name for c in commands]
    assert names[0] == "Snapshot: save JSON, Markdown, SVG and the report"
    assert [n for n in names if n.startswith("Go to GPU")] == [f"Go to GPU {i}" for i in range(4)]
    for name in (
        "Next finding",
        "Previous finding",
        "Open the selected finding",
        "History window: next",
        "Sort processes: next",
        "Advisor rules",
        "Topology",
        "Cluster view",
        "Overview",
        "Pause / resume",
        "All processes",
        "Help",
    ):
        assert name in names
    assert all("[" not in n for n in names)  # the palette reads names as markup


def test_go_to_gpu_follows_the_devices_index_and_escapes_their_names() -> None:
    device = make_demo_app(None, 1).monitor.devices[0]
    odd: DeviceInfo = replace(device, index=12, name="[bold]evil[/bold]", node="n[1]")
    (go,) = [c for c in palette_commands([odd]) if c.name.startswith("Go to GPU")]
    assert go.name == "Go to GPU 12" and go.action == "jump(12)"
    assert "\\[bold]" in go.help and "key" not in go.help  # no key jumps to GPU 12


# -- the legend: every label the detail pane draws is explained --------------------------
# Words the detail pane puts beside its gauges (a scenario may show only some).
DETAIL_WORDS = (
    "SM act",
    "tensor",
    "mem ctrl",
    "slowdown",
    "shutdown",
    "margin",
    "fan",
    "default",
    "idle downshift",
    "counted",
    "sampled",
    "replays",
    "host-limited",
)


def test_every_label_of_the_gpu_detail_is_in_the_help_legend() -> None:
    from gputui.sources.simulated import SCENARIOS
    from gputui.view.detail import View, detail
    from gputui.view.timeline import Timeline

    legend = dict(keys.LEGEND)["GPU detail"]
    terms = {t for term, _ in legend for t in term.split(", ")}
    terms |= {t for term, _ in legend for t in term.replace(",", " ").split()}
    terms |= {term for term, _ in legend}
    text = " ".join(f"{term} {meaning}" for term, meaning in legend)
    labels: set[str] = set()
    drawn = ""
    for scenario in SCENARIOS:
        app = make_demo_app(scenario, 2, warmup_s=40)
        monitor = app.monitor
        for device in monitor.devices:
            panel = detail(
                monitor.latest, device, monitor.history, Timeline(), View(60, 1.0, 150, 40),
                monitor.thresholds,
            )  # fmt: skip
            for row in panel.rows:
                if row.cells and row.cells[0].bold:
                    labels.add(row.cells[0].text.strip())
                drawn += " " + row.plain
    assert {"Util", "SM clk", "Temp", "Power", "VRAM", "PCIe", "Events", "ID"} <= labels
    assert labels <= terms, labels - terms
    for word in DETAIL_WORDS:
        if word in drawn:
            assert word in text, word
    assert "P0" in terms


def test_the_readme_names_every_demo_scenario_and_the_completion() -> None:
    from gputui.sources.simulated import SCENARIOS

    text = README.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `gputui --demo"))
    assert not [s for s in SCENARIOS if f"`{s}`" not in row]
    assert "gputui completion bash" in text
