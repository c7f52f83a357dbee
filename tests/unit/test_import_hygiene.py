"""The core never imports Textual; only the NVML source imports pynvml.

The layer contracts themselves are import-linter's (pyproject.toml, run by .ci/run); these
tests check what a contract cannot: what a real import loads.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gputui"


def _importers(module: str) -> set[str]:
    pattern = re.compile(rf"^\s*(import {module}\b|from {module}\b)", re.M)
    return {
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if pattern.search(path.read_text())
    }


def test_only_the_ui_package_imports_textual() -> None:
    assert _importers("textual")
    assert all(name.startswith("gputui/ui/") for name in _importers("textual"))


def test_only_the_nvml_source_imports_pynvml() -> None:
    importers = _importers("pynvml")
    assert importers and all(name.startswith("gputui/sources/nvml/") for name in importers)


def _loads_textual(imports: str) -> bool:
    code = f"import sys\n{imports}\nprint('textual' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return out.stdout.strip() == "True"


def test_importing_doctor_loads_no_textual() -> None:
    assert not _loads_textual("import gputui.exporters.doctor")
    assert _loads_textual("import gputui.ui.app")  # the probe itself works


def test_headless_commands_do_not_load_textual() -> None:
    code = (
        "import sys\n"
        "import gputui.cli, gputui.advisor, gputui.exporters.doctor, gputui.sampling.monitor\n"
        "import gputui.sources.simulated, gputui.sources.nvml, gputui.formats.snapshot\n"
        "import gputui.exporters.recorder, gputui.exporters.prometheus\n"
        "import gputui.sources.recorded, gputui.exporters.markdown, gputui.formats.recording\n"
        "import gputui.sampling.replay_control\n"
        "assert 'textual' not in sys.modules, 'the core imported textual'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_live_apps_start_loads_only_what_its_first_frame_draws() -> None:
    # the writers of the s key, the report, replay, remote sources, the exporter and shell
    # completion, the simulation, the pages, the overview and the palette's commands load
    # when asked for, and so do the screens over the panels; the advisor's rules load with
    # the first frame judged, after the first paint: a start over SSH does not pay for them
    # (issue 30); nor does a plain command line load argparse (cli/monitor_line.py)
    code = (
        "import sys\n"
        "import gputui.cli\n"
        "from gputui.cli import commands, opening, read_command_line\n"
        "read_command_line(['--interval', '2', '--readonly'])\n"
        "import gputui.launch, gputui.sources.nvml, gputui.ui.app\n"
        "later = ('gputui.exporters', 'gputui.cli.completion', 'gputui.cli.report',\n"
        "         'gputui.formats.recording', 'gputui.sources.recorded',\n"
        "         'gputui.sampling.replay_control', 'gputui.sources.remote',\n"
        "         'gputui.sources.prometheus.source', 'gputui.ui.svg', 'prometheus_client',\n"
        "         'gputui.sources.simulated', 'gputui.view.pages', 'gputui.view.topology',\n"
        "         'gputui.view.process_page', 'gputui.view.all_processes',\n"
        "         'gputui.view.overview', 'gputui.ui.commands', 'gputui.ui.screens',\n"
        "         'gputui.ui.processes', 'gputui.advisor', 'argparse')\n"
        "print(sorted(m for m in sys.modules if m.startswith(later)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
