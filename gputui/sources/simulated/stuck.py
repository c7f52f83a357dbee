"""Scenarios of jobs stuck, not slow, and their healthy look-alikes: a collective that
never completes, a fan stopped on a hot board, a job's ranks crowded on one GPU; memory-bound
decode and a zero-RPM fan stop at idle, which the advisor must leave alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from gputui.core import clock_events as ce
from gputui.sources.simulated import noise
from gputui.sources.simulated.cards import GIB
from gputui.sources.simulated.gpu import Gpu, Load, Reading

#: when the hang scenario's last rank stops joining the all-reduce
HANG_AT_S: Final = 20.0
#: what a rank spinning in NCCL's kernel draws, as a share of the board's limit (an H100
#: SXM waiting in an all-reduce: ~130 W of 700)
SPIN_POWER_SHARE: Final = 0.19


def hang(gpu: Gpu, t: float, reading: Reading) -> Reading:
    """A data-parallel job (``reading``: a rank of it training well) whose last rank
    stopped joining the all-reduce 20 s in (its host code is stuck: its GPU idles, its
    process rests): the other ranks spin in NCCL's kernel at 100 % utilisation and a fifth
    of their power, with no memory, SM or link traffic. On one GPU alone, that GPU spins."""
    if t < HANG_AT_S:
        return reading
    n, s = gpu.noise, gpu.spec
    process = reading.process
    assert process is not None
    waiting = gpu.index < gpu.gpus - 1 or gpu.gpus == 1
    links = tuple(replace(link, rx_bps=0.0, tx_bps=0.0) for link in reading.sample.nvlinks)
    temp = noise.approach(71.0, 45.0 if waiting else 36.0, t - HANG_AT_S, 60.0)
    sample = replace(
        reading.sample,
        util_gpu=100.0 if waiting else 0.0,
        util_mem=0.0,
        sm_activity=(12.1 if waiting else 0.0) if s.gpm else None,
        tensor_activity=0.0 if s.gpm else None,
        power_w=round(
            n.around(noise.POWER, t, SPIN_POWER_SHARE * gpu.limit, 3.0)
            if waiting
            else s.idle_power,
            1,
        ),
        temp_c=round(temp + n.around(noise.TEMP, t, 0, 0.4), 0),
        pcie_rx_bps=n.around(noise.MEM, t, 60e3, 20e3),
        pcie_tx_bps=n.around(noise.MEM, t, 40e3, 10e3),
        clock_reasons=0 if waiting else ce.GPU_IDLE,
        sm_clock_mhz=reading.sample.sm_clock_mhz if waiting else 345,
        graphics_clock_mhz=reading.sample.graphics_clock_mhz if waiting else 345,
        nvlinks=links,
    )
    # the waiting ranks' host threads spin in the wait; the stuck rank's rests
    process = replace(
        process,
        cpu_percent=100.0 if waiting else 1.5,
        workers_cpu_percent=0.0 if process.children else None,
        workers_active=0 if process.children else None,
        sm_util=sample.util_gpu,
    )
    return Reading(sample, process, (100.0,) if waiting else ())


def decode(gpu: Gpu, t: float) -> Reading:
    """Memory-bound decode (an LLM server's tensor-parallel ranks at a small batch): a
    kernel always runs and the memory is busy, at under half the board's power. Work,
    however low the power: calm."""
    n, s = gpu.noise, gpu.spec
    reading = gpu.training(
        t,
        Load(
            util=100.0,
            clock_factor=n.around(noise.CLOCK, t, 0.985, 0.01),
            temp=noise.approach(45.0, 61.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.POWER, t, 0.43 * s.power_default, 12.0),
            power_util=100.0,
            mem_frac=0.9 + 0.002 * n(noise.MEM, t),  # the KV cache's reserve
            rx=4e6,
            tx=2e6,
            cpu=n.around(noise.UTIL, t, 60.0, 10.0),
            workers=0,
            threads=64,
            command="/opt/venv/bin/python3 -m vllm.entrypoints.openai.api_server --model "
            f"meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size {gpu.gpus}",
        ),
    )
    sample = replace(
        reading.sample,
        util_mem=round(n.around(noise.MEM, t, 78.0, 4.0), 0),
        sm_activity=round(n.around(noise.UTIL, t, 52.0, 4.0), 1) if s.gpm else None,
    )
    return Reading(sample, reading.process, reading.host_cores)


def fan_stopped(gpu: Gpu, t: float) -> Reading:
    """A workstation board under load whose fan a tool left at 0 %: the tachometer reads
    0 RPM while the board climbs past 78 °C toward its 90 °C limit, a few degrees a
    minute. Nothing throttles yet."""
    n, s = gpu.noise, gpu.spec
    temp = noise.approach(58.0, 95.0, t, 200.0) + n.around(noise.TEMP, t, 0, 0.3)
    reading = gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 98.0, 1.5),
            clock_factor=n.around(noise.CLOCK, t, 0.86, 0.01),
            temp=temp,
            power=n.around(noise.POWER, t, 0.9 * s.power_default, 12.0),
            power_util=98.0,
            mem_frac=0.8,
            env=(),
        ),
    )
    return Reading(replace(reading.sample, fan_pct=0.0, fan_rpm=0.0), reading.process, ())


def _idle(gpu: Gpu, t: float, temp: float, clock_factor: float, mem_frac: float) -> Reading:
    """A GPU nothing runs on (its reading's process is the one that would run there)."""
    reading = gpu.training(
        t,
        Load(
            util=0.0,
            clock_factor=clock_factor,
            temp=round(gpu.noise.around(noise.TEMP, t, temp, 0.6), 0),
            power=0.0,
            power_util=100.0,
            mem_frac=mem_frac,
            env=(),
        ),
    )
    return Reading(replace(reading.sample, clock_reasons=ce.GPU_IDLE), reading.process, ())


def zero_rpm(gpu: Gpu, t: float) -> Reading:
    """A consumer board at idle with its fans stopped on purpose (zero-RPM mode): cool,
    no fan needed. Calm."""
    reading = _idle(gpu, t, 41.0, 0.1, 0.02)
    return Reading(replace(reading.sample, fan_pct=0.0, fan_rpm=0.0), None, ())


#: the memory each rank of the crowded job holds
_RANK_MEMORY: Final = 14 * GIB


def crowded(gpu: Gpu, t: float, rank: Reading) -> Reading:
    """A torchrun job (``rank``: this GPU's rank, training) whose ranks never call
    set_device: every rank runs on GPU 0, time-slicing it, while the GPUs given to the
    other ranks hold nothing and idle."""
    assert rank.process is not None
    if gpu.index == 0:
        used = min(gpu.gpus, 8) * _RANK_MEMORY + 600 * 2**20
        sample = replace(
            rank.sample, mem_used=used, mem_free=gpu.spec.memory_total - used, util_gpu=100.0
        )
        return Reading(sample, replace(rank.process, gpu_memory=_RANK_MEMORY), rank.host_cores)
    idle = _idle(gpu, t, 33.0, 0.17, 0.0066)
    sample = replace(idle.sample, pcie_rx_bps=4e4, pcie_tx_bps=3e4)
    # this GPU's rank landed on GPU 0
    landed = replace(rank.process, gpu_index=0, gpu_memory=_RANK_MEMORY, sm_util=None)
    return Reading(sample, landed, rank.host_cores)
