"""Synthetic histories for advisor tests: a few lines describe a GPU's recent past."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from gputui.advisor import make_advisor
from gputui.core.config import Thresholds
from gputui.core.model import (
    DeviceInfo,
    Finding,
    Frame,
    GpuSample,
    HostSample,
    HostSettings,
    JobSettings,
    ProcessSample,
)
from gputui.sampling.history import History

GIB = 1024**3

H100 = DeviceInfo(
    index=0,
    name="NVIDIA H100 80GB HBM3",
    memory_total=80 * GIB,
    max_sm_clock_mhz=1980,
    default_app_sm_clock_mhz=1755,
    temp_slowdown_c=89.0,
    temp_shutdown_c=92.0,
    temp_gpu_max_c=87.0,
    power_limit_w=700.0,
    power_default_limit_w=700.0,
    pcie_max_gen=5,
    pcie_max_width=16,
    pcie_gpu_max_gen=5,
    persistence_mode=True,
    driver_version="550.54.15",
    cuda_driver_version="12.4",
    numa_node=0,
    cpu_affinity="0-31",
    pcie_topology=("X",),
    nvlink_remote=(),
)

BUSY = GpuSample(
    index=0,
    util_gpu=97.0,
    sm_clock_mhz=1965,
    app_sm_clock_mhz=1755,
    temp_c=70.0,
    power_w=560.0,
    power_limit_w=700.0,
    clock_reasons=0,
    mem_used=50 * GIB,
    mem_total=80 * GIB,
    pcie_gen=5,
    pcie_width=16,
    pcie_rx_bps=2e9,
    pcie_tx_bps=0.3e9,
    pcie_replay_count=0,
    ecc_volatile_uncorrected=0,
    remapped_rows_pending=False,
)

IDLE = replace(
    BUSY,
    util_gpu=0.0,
    sm_clock_mhz=345,
    temp_c=33.0,
    power_w=70.0,
    clock_reasons=0x1,
    mem_used=500 * 1024**2,
    pcie_gen=1,
    pcie_rx_bps=1e4,
    pcie_tx_bps=1e4,
)

TRAINER = ProcessSample(
    pid=4242,
    gpu_index=0,
    gpu_memory=49 * GIB,
    name="python",
    user="alice",
    command="python train.py --lr 3e-4",
    cpu_percent=140.0,
    children=8,
    cpus_allowed="0-63",
    cpu_nodes=(0, 1),
)

HOST = HostSample(
    cpu_percent=20.0,
    cpu_count=64,
    mem_total=512 * GIB,
    mem_available=400 * GIB,
    swap_total=0,
    swap_used=0,
    iowait_pct=0.5,
    disk_read_bps=1e8,
)

Step = Callable[[int], dict[str, Any]]


class Sim:
    """Feeds frames into a history and an advisor, one second apart."""

    def __init__(
        self,
        devices: Sequence[DeviceInfo] = (H100,),
        thresholds: Thresholds | None = None,
        start: float = 1_000_000.0,
    ) -> None:
        self.devices = tuple(devices)
        self.history = History(4000)
        self.advisor = make_advisor(self.devices, thresholds)
        self.now = start
        self.findings: tuple[Finding, ...] = ()

    def tick(
        self,
        gpus: Sequence[GpuSample],
        processes: Sequence[ProcessSample] = (TRAINER,),
        host: HostSample | None = HOST,
        jobs: Sequence[JobSettings] = (),
        settings: HostSettings | None = None,
    ) -> tuple[Finding, ...]:
        self.history.add(
            Frame(
                time=self.now,
                gpus=tuple(gpus),
                host=host,
                processes=tuple(processes),
                jobs=tuple(jobs),
                settings=settings,
            )
        )
        self.findings = self.advisor.update(self.history)
        assert not self.advisor.rule_errors, self.advisor.rule_errors
        self.now += 1.0
        return self.findings

    def run(
        self,
        seconds: int,
        gpu: GpuSample | Callable[[int], GpuSample],
        processes: Sequence[ProcessSample] | Callable[[int], Sequence[ProcessSample]] = (TRAINER,),
        host: HostSample | Callable[[int], HostSample | None] | None = HOST,
    ) -> tuple[Finding, ...]:
        for i in range(seconds):
            g = gpu(i) if callable(gpu) else gpu
            p = processes(i) if callable(processes) else processes
            h = host(i) if callable(host) else host
            self.tick([g], p, h)
        return self.findings

    def rules(self) -> set[str]:
        return {f.rule for f in self.findings}


def torchrun_env(rank: int, world: int, port: int = 29500) -> tuple[str, ...]:
    """The environment torchrun gives each rank of one job (what host.py reads of it)."""
    return (
        f"LOCAL_RANK={rank}",
        "MASTER_ADDR=10.0.0.1",
        f"MASTER_PORT={port}",
        f"RANK={rank}",
        f"WORLD_SIZE={world}",
    )


def alarms(findings: Sequence[Finding]) -> set[str]:
    """Rules that fired at warning or critical: an info line is context, not an alarm."""
    return {f.rule for f in findings if f.severity != "info"}


def rules_of(findings: Sequence[Finding]) -> set[str]:
    return {f.rule for f in findings}
