"""The core never imports Textual; only the NVML source imports pynvml."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gputui"


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
    assert _importers("pynvml") == {"gputui/sources/nvml.py"}


def test_headless_commands_do_not_load_textual() -> None:
    code = (
        "import sys\n"
        "import gputui.cli, gputui.advisor, gputui.doctor, gputui.monitor\n"
        "import gputui.sources.simulated, gputui.sources.nvml, gputui.exporters.snapshot\n"
        "import gputui.exporters.record, gputui.exporters.prometheus, gputui.sources.replay\n"
        "assert 'textual' not in sys.modules, 'the core imported textual'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
