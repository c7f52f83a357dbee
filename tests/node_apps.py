"""The app over a fake node (the NVML double) whose GPUs run given processes, some of them
real processes of the test: the screen's process keys tested against real PIDs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from gputui.core.config import Config
from gputui.launch import make_app
from gputui.sources.host import HostReader
from gputui.sources.nvml import NvmlSource
from gputui.sources.process_access import LocalProcesses
from gputui.ui.app import GpuTuiApp
from tests.nvml_double import FakeGpu, FakeNvmlLib, FakeProcess, install

MIB = 1 << 20


def node_app(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    held: Mapping[int, Sequence[int]],
    seen: Sequence[int],
    access: LocalProcesses,
    gpus: int = 8,
    readonly: bool = False,
    **gpu: Any,
) -> tuple[GpuTuiApp, NvmlSource]:
    """``gpus`` fake GPUs, each running the PIDs ``held`` gives it (GPU n's n + 1 GiB);
    ``seen``: the PIDs this machine sees as GPU processes (a real GPU process holds
    /dev/nvidia*, which this machine may not have: the others are another namespace's).
    Two readings in (the second has each process's CPU share); no sampler runs."""
    install(
        monkeypatch,
        FakeNvmlLib(
            [
                FakeGpu(
                    processes=[FakeProcess(pid, (i + 1) * 1000 * MIB) for pid in held.get(i, ())],
                    **gpu,
                )
                for i in range(gpus)
            ]
        ),
    )
    source = NvmlSource(host=HostReader(device_check=lambda pid: pid in seen))
    app = make_app(
        source,
        source.open(),
        Config(),
        snapshot_dir=tmp_path,
        live=False,
        ascii=False,
        process_access=access,
        readonly=readonly,
    )
    for _ in range(2):
        app.monitor.ingest(source.read())
    return app, source
