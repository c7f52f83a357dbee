"""The named scenarios: what each GPU of the demo does, second by second. Every reading is
a pure function of (seed, GPU, time since start)."""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from gputui.core import clock_events as ce
from gputui.core.model import GpuSample
from gputui.core.pcie import link_bandwidth
from gputui.sources.simulated import noise, stuck
from gputui.sources.simulated.cards import (
    A100_PCIE,
    H100_PCIE,
    H100_SXM,
    HOST_CPUS,
    MAX_GPUS,
    MIB,
    MIX,
    RTX_4090,
)
from gputui.sources.simulated.gpu import Gpu, Load, Reading, Scenario


def idle(gpu: Gpu, t: float) -> Reading:
    s, n = gpu.spec, gpu.noise
    used = 534 * MIB
    sample = GpuSample(
        index=gpu.index,
        util_gpu=0.0,
        util_mem=0.0,
        sm_activity=0.0 if s.gpm else None,
        tensor_activity=0.0 if s.gpm else None,
        sm_clock_mhz=345,
        mem_clock_mhz=s.max_mem_clock,
        graphics_clock_mhz=345,
        app_sm_clock_mhz=s.default_app_sm_clock,
        temp_c=round(n.around(noise.UTIL, t, 33.0, 0.6), 0),
        mem_temp_c=31.0 if s.gpm else None,
        temp_margin_c=s.temp_slowdown - 33.0,
        fan_pct=None,
        power_w=round(n.around(noise.POWER, t, s.idle_power, 1.5), 1),
        power_limit_w=s.power_default,
        pstate=0,
        clock_reasons=ce.GPU_IDLE,
        mem_used=used,
        mem_free=s.memory_total - used,
        mem_total=s.memory_total,
        pcie_gen=1,  # links downshift when idle to save power: normal
        pcie_width=16,
        pcie_rx_bps=n.around(noise.RX, t, 40e3, 20e3),
        pcie_tx_bps=n.around(noise.TX, t, 30e3, 15e3),
        pcie_replay_count=0,
        ecc_volatile_corrected=0,
        ecc_volatile_uncorrected=0,
        remapped_rows_pending=False,
        energy_j=round(s.idle_power * t + 1.0e6 * (gpu.index + 1), 1),
        **gpu.topology(t),  # type: ignore[arg-type]
    )
    return Reading(sample, None, ())


def healthy(gpu: Gpu, t: float) -> Reading:
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 97.0, 2.5),
            clock_factor=n.around(noise.CLOCK, t, 0.985, 0.012),
            temp=noise.approach(48.0, 71.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, 0.82 * s.power_default, 25.0),
            power_util=97.0,
            mem_frac=0.76 + 0.004 * n(noise.MEM, t),
        ),
    )


def thermal(gpu: Gpu, t: float) -> Reading:
    n, s = gpu.noise, gpu.spec
    # Heats towards 91.5 °C; HW slowdown holds it just above the slowdown limit.
    temp = min(noise.approach(62.0, 91.5, t, 10.0), s.temp_slowdown + 0.5 + n(noise.TEMP, t))
    reasons = 0
    if temp >= (s.temp_gpu_max or s.temp_slowdown):
        reasons |= ce.SW_THERMAL
    if temp >= s.temp_slowdown:
        reasons |= ce.HW_THERMAL
    factor = 1.0 - 0.30 * min(1.0, max(0.0, (temp - 84.0) / 5.0))
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 98.0, 1.5),
            clock_factor=factor * n.around(noise.CLOCK, t, 0.995, 0.004),
            temp=temp,
            power=0.82 * s.power_default * factor**1.3 + n.around(noise.POWER, t, 0, 12.0),
            power_util=98.0,
            mem_frac=0.75 + 0.004 * n(noise.MEM, t),
            reasons=reasons,
        ),
    )


def powercap(gpu: Gpu, t: float) -> Reading:
    """A power limit set below the board's default (a site policy, a forgotten
    nvidia-smi -pl): capped all the time, clocks well below where the default holds (the
    job would draw what the healthy one does; the limiter holds it just under the limit)."""
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 99.0, 1.0),
            clock_factor=n.around(noise.CLOCK, t, 0.62, 0.02),
            temp=noise.approach(50.0, 66.0, t, 35.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.UNCAPPED, t, 0.82 * s.power_default, 20.0),
            power_util=99.0,
            cap=gpu.limit * n.around(noise.POWER, t, 0.993, 0.006),
            mem_frac=0.71 + 0.004 * n(noise.MEM, t),
            reasons=ce.SW_POWER_CAP,
        ),
    )


def at_power_limit(gpu: Gpu, t: float) -> Reading:
    """A healthy big job at the board's default limit, as an H200 runs bf16 GEMMs: 692 W
    of 700, the SW power cap set all the time, the SM clock at 76 % of its maximum."""
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 99.0, 0.8),
            clock_factor=n.around(noise.CLOCK, t, 0.76, 0.01),
            temp=noise.approach(50.0, 68.0, t, 35.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.UNCAPPED, t, 1.04 * s.power_default, 10.0),  # more than it may
            power_util=99.0,
            cap=s.power_default * n.around(noise.POWER, t, 0.989, 0.004),
            mem_frac=0.74 + 0.004 * n(noise.MEM, t),
            reasons=ce.SW_POWER_CAP,
        ),
    )


def vram(gpu: Gpu, t: float) -> Reading:
    n, s = gpu.noise, gpu.spec
    # A leak: memory grows steadily toward the total (the plateau of a framework's
    # cache would be calm); at the ceiling the allocator retries and the GPU stalls: a
    # failed allocation gives the cached blocks back (NVML's "used" dips) and takes them again.
    frac = 0.55 + 0.435 * min(1.0, t / 200.0) + 0.002 * n(noise.MEM, t)
    full = t >= 200.0
    stall = full and n(noise.STEP_BUSY, t) < 0.5
    if stall:
        frac -= 0.015
    util = n(noise.STEP_IDLE_UTIL, t) * 3.0 if stall else n.around(noise.UTIL, t, 93.0, 4.0)
    return gpu.training(
        t,
        Load(
            util=util,
            # stalled, the clocks fall back as the starved scenario's do between steps
            clock_factor=n.around(noise.CLOCK, t, 0.90 if stall else 0.98, 0.01),
            temp=noise.approach(50.0, 70.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, 0.78 * s.power_default, 25.0),
            power_util=93.0,
            mem_frac=frac,
            command="/opt/conda/bin/python train.py --model llama-3-8b --batch-size 48"
            " --seq-len 8192",
        ),
    )


def pcie(gpu: Gpu, t: float) -> Reading:
    n, s = gpu.noise, gpu.spec
    capacity = link_bandwidth(3, 8) or 0.0
    # Waiting on host-to-device copies: utilisation sags with every transfer.
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 64.0, 10.0),
            clock_factor=n.around(noise.CLOCK, t, 0.99, 0.01),
            temp=noise.approach(45.0, 63.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.POWER, t, 0.62 * s.power_default, 15.0),
            power_util=64.0,
            mem_frac=0.58,
            rx=0.86 * capacity,
            tx=0.05 * capacity,
            link=(3, 8),
            cpu=240.0,
            workers=12,
        ),
    )


def loader_bound(gpu: Gpu, t: float) -> Reading:
    """Starvation as the driver shows it: four data-loader workers each burn a core and
    cannot keep up, the GPU busy 30-60 % tick after tick and never idle, the driver's
    samples (six a second) alike."""
    n, s = gpu.noise, gpu.spec
    util = n.around(noise.UTIL, t, 42.0, 9.0)
    samples = tuple(
        round(min(100.0, max(0.0, util + 12.0 * (n(noise.STEP_IDLE_UTIL, t + k / 6) - 0.5))), 0)
        for k in range(6)
    )
    return gpu.training(
        t,
        Load(
            util=util,
            clock_factor=n.around(noise.CLOCK, t, 0.99, 0.005),
            temp=noise.approach(45.0, 57.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.POWER, t, 0.45 * s.power_default, 15.0),
            power_util=42.0,
            mem_frac=0.38,
            cpu=n.around(noise.PROC_CPU, t, 41.0, 3.0),
            workers=4,
            threads=12,
            command="/usr/bin/python3 /home/ana/resnet/train_resnet.py --data /data/in1k"
            " --workers 4",
            env=(),  # its own single-process job: no rank of the node's training job
            util_samples=samples,
            worker_cpu=99.5,
        ),
    )


def starved(gpu: Gpu, t: float) -> Reading:
    n = gpu.noise
    # One Python process decodes every batch itself (num_workers=0): the GPU finishes
    # a step in a fraction of a second, then waits for the next batch.
    busy = n(noise.STEP_BUSY, t) < 0.3
    util = n.around(noise.UTIL, t, 93.0, 4.0) if busy else n(noise.STEP_IDLE_UTIL, t) * 3.0
    reading = gpu.training(
        t,
        Load(
            util=util,
            clock_factor=0.99 if busy else 0.90,
            temp=noise.approach(45.0, 58.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.5),
            power=n.around(noise.POWER, t, 520.0, 20.0),  # between steps: near its idle draw
            power_util=93.0,
            mem_frac=0.42,
            cpu=n.around(noise.PROC_CPU, t, 99.5, 1.2),
            workers=0,
            threads=5,
            command="/usr/bin/python3 finetune.py --data /data/imagenet --num-workers 0",
            env=(),  # its own single-process job: no rank of the node's training job
        ),
    )
    return Reading(reading.sample, reading.process, (min(100.0, 99.0 + n(noise.MAIN_CORE, t)),))


# -- topology ------------------------------------------------------------------
def numa(gpu: Gpu, t: float) -> Reading:
    """A rank launched without binding on a two-socket node: the launcher pinned it and
    its loader workers to the other socket, and its memory followed; the GPU waits."""
    n, s = gpu.noise, gpu.spec
    busy = n(noise.STEP_BUSY, t) < 0.7
    reading = gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 92.0, 4.0) if busy else n(noise.STEP_IDLE_UTIL, t) * 20.0,
            clock_factor=n.around(noise.CLOCK, t, 0.985 if busy else 0.90, 0.01),
            temp=noise.approach(48.0, 64.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, 0.74 * s.power_default, 30.0),  # ~0.6 of it on average
            power_util=92.0,
            mem_frac=0.7,
            rx=5.5e9,
        ),
    )
    assert reading.process is not None
    far = 1 - gpu.node
    half = HOST_CPUS // 2
    memory = [0, 0]
    rss = reading.process.rss or 0
    memory[far], memory[gpu.node] = int(rss * 0.9), rss - int(rss * 0.9)
    process = replace(
        reading.process,
        cpus_allowed=f"{far * half}-{far * half + half - 1}",
        cpu_nodes=(far,),
        workers_nodes=(far,) * (reading.process.children or 0),
        numa_memory=tuple(memory),
    )
    return Reading(reading.sample, process, reading.host_cores)


def nvlink_down(gpu: Gpu, t: float) -> Reading:
    """Two NVLinks of the GPU went down (Xid 74) and a third one retransmits."""
    reading = healthy(gpu, t)
    links = list(gpu._nvlinks)
    for k in (3, 11):
        if k < len(links):
            links[k] = replace(links[k], active=False, rx_bps=0.0, tx_bps=0.0)
    errors = 40 + int(t * 2)  # two CRC errors a second on link 5
    if len(links) > 5:
        links[5] = replace(links[5], crc_errors=errors, replay_errors=errors // 10)
    sample = replace(
        reading.sample,
        nvlinks=tuple(links),
        nvlink_errors=errors + errors // 10 if len(links) > 5 else 0,
    )
    return Reading(sample, reading.process, reading.host_cores)


# -- calm verdicts: healthy jobs that look alarming to a naive rule ---------------
def pytorch_plateau(gpu: Gpu, t: float) -> Reading:
    """PyTorch's caching allocator: ~97 % of the card reserved from the first steps
    and flat after (freed blocks stay reserved)."""
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 96.0, 3.0),
            clock_factor=n.around(noise.CLOCK, t, 0.985, 0.012),
            temp=noise.approach(48.0, 72.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, 0.8 * s.power_default, 25.0),
            power_util=96.0,
            mem_frac=0.972 + 0.002 * n(noise.MEM, t),
            env=(*gpu.launcher_env(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
            libraries=(
                "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
                "/opt/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so",
            ),
        ),
    )


def sweep(gpu: Gpu, t: float) -> Reading:
    """A hyperparameter sweep: independent single-GPU runs of one script; the odd
    GPUs train a smaller model and run at lower utilisation. No peers: no straggler."""
    n, s = gpu.noise, gpu.spec
    lr = ("1e-4", "3e-4", "1e-3", "3e-3")[gpu.index % 4]
    small = gpu.index % 2 == 1
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 70.0 if small else 97.0, 3.0),
            clock_factor=n.around(noise.CLOCK, t, 0.86 if small else 0.985, 0.01),
            temp=noise.approach(48.0, 66.0 if small else 71.0, t, 40.0)
            + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, (0.55 if small else 0.8) * s.power_default, 20.0),
            power_util=70.0 if small else 97.0,
            mem_frac=0.6,
            command=f"/opt/conda/envs/sweep/bin/python train.py --lr {lr} --seed {gpu.index}",
            env=(),
        ),
    )


def gen5_in_gen4(gpu: Gpu, t: float) -> Reading:
    """A Gen5 card in a Gen4 host: Gen4 x16 under load is the most the host allows."""
    reading = healthy(gpu, t)
    return reading


def warm_4090(gpu: Gpu, t: float) -> Reading:
    """An RTX 4090 under load at its 83 °C target: fans hold it there, no throttling."""
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 98.0, 1.5),
            clock_factor=n.around(noise.CLOCK, t, 0.88, 0.01),
            temp=min(83.0, noise.approach(55.0, 83.4, t, 25.0)) + n.around(noise.TEMP, t, 0, 0.4),
            power=n.around(noise.POWER, t, 0.93 * s.power_default, 12.0),
            power_util=98.0,
            mem_frac=0.8,
            env=(),
        ),
    )


def hw_blip(gpu: Gpu, t: float) -> Reading:
    """An idle GPU with a one-second HW slowdown now and then (a load change, a PSU
    transient): a reason bit is an instant, not a state."""
    reading = idle(gpu, t)
    if int(t) % 60 == 17:
        sample = replace(reading.sample, clock_reasons=ce.GPU_IDLE | ce.HW_SLOWDOWN)
        return Reading(sample, reading.process, reading.host_cores)
    return reading


def minor_compat(gpu: Gpu, t: float) -> Reading:
    """A CUDA 12.6 runtime on a driver for CUDA 12.4: minor-version compatibility."""
    n, s = gpu.noise, gpu.spec
    return gpu.training(
        t,
        Load(
            util=n.around(noise.UTIL, t, 96.0, 2.5),
            clock_factor=n.around(noise.CLOCK, t, 0.985, 0.012),
            temp=noise.approach(48.0, 70.0, t, 40.0) + n.around(noise.TEMP, t, 0, 0.6),
            power=n.around(noise.POWER, t, 0.8 * s.power_default, 25.0),
            power_util=96.0,
            mem_frac=0.7,
            runtime="12.6",
            env=(),
        ),
    )


# -- stuck, not slow: the healthy job's ranks, stuck (sources/simulated/stuck.py) --------
def hang(gpu: Gpu, t: float) -> Reading:
    return stuck.hang(gpu, t, healthy(gpu, t))


def crowded(gpu: Gpu, t: float) -> Reading:
    return stuck.crowded(gpu, t, healthy(gpu, t))


# Every scenario, once: its card, what it does, and where it sits in the default mix, so
# even 4 GPUs show several causes at once.
SCENARIO_TABLE: Final[tuple[Scenario, ...]] = (
    Scenario("healthy", H100_SXM, healthy, mix_slots=(0, 7)),
    Scenario("thermal", H100_SXM, thermal, mix_slots=(1,)),
    Scenario("powercap", H100_SXM, powercap, mix_slots=(4,), power_limit_share=0.7),
    Scenario("vram", H100_SXM, vram, mix_slots=(2,)),
    # a Gen4 x16 card running at Gen3 x8
    Scenario("pcie", A100_PCIE, pcie, mix_slots=(5,)),
    Scenario("starved", H100_SXM, starved, mix_slots=(3,)),
    Scenario("loader-bound", H100_SXM, loader_bound),
    Scenario("idle", H100_SXM, idle, mix_slots=(6,)),
    # Calm verdicts, outside the default mix: each looks alarming to a naive rule.
    Scenario("pytorch-plateau", H100_SXM, pytorch_plateau),
    Scenario("sweep", H100_SXM, sweep),
    Scenario("gen5-in-gen4", H100_PCIE, gen5_in_gen4, host_pcie_gen=4),
    Scenario("warm-4090", RTX_4090, warm_4090),
    Scenario("hw-blip", H100_SXM, hw_blip),
    Scenario("minor-compat", H100_SXM, minor_compat),
    Scenario("at-power-limit", H100_SXM, at_power_limit),
    # Topology, outside the default mix: a rank on the far socket, NVLinks down.
    Scenario("numa", H100_SXM, numa),
    Scenario("nvlink-down", H100_SXM, nvlink_down),
    # Stuck, not slow, outside the default mix: a collective that never completes, a fan
    # stopped on a hot board, ranks crowded on one GPU; and their calm look-alikes:
    # memory-bound decode, fans stopped at idle on purpose.
    Scenario("hang", H100_SXM, hang),
    Scenario("fan-stopped", RTX_4090, stuck.fan_stopped),
    Scenario("crowded", H100_SXM, crowded),
    Scenario("decode", H100_SXM, stuck.decode),
    Scenario("zero-rpm", RTX_4090, stuck.zero_rpm),
)
BY_NAME: Final = {scenario.name: scenario for scenario in SCENARIO_TABLE}
SCENARIOS: Final[tuple[str, ...]] = tuple(BY_NAME)
MIX_ORDER: Final[tuple[str, ...]] = tuple(
    name for _, name in sorted((slot, sc.name) for sc in SCENARIO_TABLE for slot in sc.mix_slots)
)


def resolve_scenarios(choice: str | None, gpus: int) -> tuple[str, ...]:
    """The scenario of each GPU: one name for all of them, or the default mix."""
    if not 1 <= gpus <= MAX_GPUS:
        raise ValueError(f"--gpus must be between 1 and {MAX_GPUS}, not {gpus}")
    if choice is None or choice == MIX:
        return tuple(MIX_ORDER[i % len(MIX_ORDER)] for i in range(gpus))
    if choice not in SCENARIOS:
        known = ", ".join((*SCENARIOS, MIX))
        raise ValueError(f"unknown scenario {choice!r}; choose one of: {known}")
    return (choice,) * gpus
