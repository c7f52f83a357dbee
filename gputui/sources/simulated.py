"""A simulated node: named scenarios for the demo, the tests and the screenshots.

Every reading is a pure function of (seed, GPU, time since start), so a fixed clock gives
the same frames on every run and machine. Nothing downstream knows the data is simulated
except the source's label, which the UI always shows.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from gputui.core import clock_events as ce
from gputui.core.config import WORKER_ACTIVE_PCT
from gputui.core.model import DeviceInfo, Frame, GpuSample, HostSample, NvLinkSample, ProcessSample
from gputui.core.names import SourceKind
from gputui.core.pcie import link_bandwidth

MIX = "mix"
MAX_GPUS = 64
GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, slots=True)
class CardSpec:
    """Published facts of a card model, as NVML reports them."""

    name: str
    architecture: str
    compute_capability: str
    memory_total: int
    max_sm_clock: int
    max_mem_clock: int
    default_app_sm_clock: int
    temp_slowdown: float
    temp_shutdown: float
    temp_gpu_max: float | None
    temp_mem_max: float | None
    power_default: float
    power_min: float
    pcie_gen: int
    idle_power: float
    gpm: bool


H100_SXM = CardSpec(
    name="NVIDIA H100 80GB HBM3",
    architecture="Hopper",
    compute_capability="9.0",
    memory_total=81559 * MIB,
    max_sm_clock=1980,
    max_mem_clock=2619,
    default_app_sm_clock=1755,
    temp_slowdown=89.0,
    temp_shutdown=92.0,
    temp_gpu_max=87.0,
    temp_mem_max=95.0,
    power_default=700.0,
    power_min=200.0,
    pcie_gen=5,
    idle_power=72.0,
    gpm=True,
)

A100_PCIE = CardSpec(
    name="NVIDIA A100 80GB PCIe",
    architecture="Ampere",
    compute_capability="8.0",
    memory_total=81920 * MIB,
    max_sm_clock=1410,
    max_mem_clock=1512,
    default_app_sm_clock=1410,
    temp_slowdown=89.0,
    temp_shutdown=92.0,
    temp_gpu_max=85.0,
    temp_mem_max=95.0,
    power_default=300.0,
    power_min=150.0,
    pcie_gen=4,
    idle_power=45.0,
    gpm=False,
)

# A consumer Ada card: GDDR6X (no memory temperature limit reported), runs at its 83 °C
# target under load by design (GPU Boost holds it there with the fans, without throttling).
RTX_4090 = CardSpec(
    name="NVIDIA GeForce RTX 4090",
    architecture="Ada Lovelace",
    compute_capability="8.9",
    memory_total=24564 * MIB,
    max_sm_clock=3105,
    max_mem_clock=10501,
    default_app_sm_clock=2520,
    temp_slowdown=90.0,
    temp_shutdown=95.0,
    temp_gpu_max=90.0,
    temp_mem_max=None,
    power_default=450.0,
    power_min=150.0,
    pcie_gen=4,
    idle_power=22.0,
    gpm=False,
)

# A Gen5 card for PCIe slots (placed in a Gen4 host by the gen5-in-gen4 scenario)
H100_PCIE = CardSpec(
    name="NVIDIA H100 PCIe",
    architecture="Hopper",
    compute_capability="9.0",
    memory_total=81559 * MIB,
    max_sm_clock=1755,
    max_mem_clock=1593,
    default_app_sm_clock=1620,
    temp_slowdown=90.0,
    temp_shutdown=95.0,
    temp_gpu_max=88.0,
    temp_mem_max=95.0,
    power_default=350.0,
    power_min=200.0,
    pcie_gen=5,
    idle_power=48.0,
    gpm=True,
)

DRIVER_VERSION = "550.54.15"
CUDA_DRIVER_VERSION = "12.4"
HOST_CPUS = 64
NVLINKS = 18  # an H100 SXM's links, each to one of the board's NVSwitches
NVSWITCHES = ("00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0", "00000000:08:00.0")
# How long before the source opened the host booted, the node's training job started (its
# ranks a fraction of a second apart) and a GPU's own job started (plus a step per GPU).
BOOT_AGE_S = 3 * 86400 + 4 * 3600 + 12 * 60
JOB_AGE_S = 2 * 3600 + 34 * 60
OWN_JOB_AGE_S = 20 * 60
OWN_JOB_STEP_S = 733


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


# Noise channels: each reading draws from its own, so changing one leaves the others as
# they were (and the screenshots with them).
_UTIL: Final = 1
_UTIL_MEM: Final = 2
_RX: Final = 3
_TX: Final = 4
_RSS: Final = 5
_POWER: Final = 6
_CLOCK: Final = 7
_TEMP: Final = 8
_MEM: Final = 9
_WORKER_CORES: Final = 10  # 10, 11, ...: one per data-loader worker
_STEP_BUSY: Final = 11  # the starved scenario: is the GPU busy this second?
_STEP_IDLE_UTIL: Final = 12
_PROC_CPU: Final = 13
_MAIN_CORE: Final = 14
# ... and the host's
_HOST_LOAD: Final = 1
_HOST_MEM: Final = 2
_HOST_IOWAIT: Final = 3
_HOST_DISK: Final = 4
_HOST_CORES: Final = 100  # 100, 101, ...: one per CPU


def _mix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


class _Noise:
    """Deterministic noise in [0, 1) keyed by (seed, gpu, channel, whole second)."""

    def __init__(self, seed: int, gpu: int) -> None:
        self._base = _mix64(seed * 1_000_003 + gpu * 7919 + 1)

    def __call__(self, channel: int, t: float) -> float:
        # _mix64, inlined: the demo draws ~190 of these per tick and it shows in its CPU
        x = (self._base ^ (channel * 0x100000001B3) ^ math.floor(t)) + 0x9E3779B97F4A7C15
        x &= 0xFFFFFFFFFFFFFFFF
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return (x ^ (x >> 31)) / 18446744073709551616.0  # 2**64

    def around(self, channel: int, t: float, centre: float, spread: float) -> float:
        return centre + (self(channel, t) * 2.0 - 1.0) * spread


@dataclass(frozen=True, slots=True)
class _Reading:
    sample: GpuSample
    process: ProcessSample | None
    host_cores: tuple[float, ...]  # CPU % of the cores this GPU's job keeps busy


def _approach(start: float, target: float, t: float, tau: float) -> float:
    return target + (start - target) * math.exp(-t / tau)


class _Gpu:
    def __init__(self, index: int, scenario: str, seed: int, gpus: int = 1) -> None:
        self.index = index
        self.scenario = scenario
        self.spec = _BY_NAME[scenario].card
        self.host_pcie_gen = _BY_NAME[scenario].host_pcie_gen or self.spec.pcie_gen
        # the enforced power limit: the default, unless the scenario lowered it
        self.limit = self.spec.power_default * (_BY_NAME[scenario].power_limit_share or 1.0)
        self.noise = _Noise(seed, index)
        self.pid = 2100 + 97 * index
        self.gpus = gpus
        # two sockets: the first half of the GPUs on node 0, in pairs behind PCIe switches
        self.node = 0 if index < gpus / 2 or gpus == 1 else 1
        half = HOST_CPUS // 2
        self.cpus = f"{self.node * half}-{self.node * half + half - 1}"
        self.links = NVLINKS if self.spec is H100_SXM else 0
        self.opened = 0.0  # when the source opened (whole seconds): processes start before
        self._nvlinks = tuple(
            NvLinkSample(
                link=k,
                active=True,
                rx_bps=1.9e9 + 0.1e9 * (k % 3),
                tx_bps=1.8e9 + 0.1e9 * (k % 2),
                crc_errors=0,
                replay_errors=0,
                recovery_errors=0,
            )
            for k in range(self.links)
        )

    def topology(self, t: float) -> dict[str, object]:
        """The NVLink readings of a tick: every link up and clean, the fabric ready."""
        if not self.links:
            return {}
        return {"nvlinks": self._nvlinks, "nvlink_errors": 0, "fabric_state": "completed"}

    def near(self, rss: int, workers: int) -> dict[str, object]:
        """A process bound to its GPU's node, as a well-launched job is."""
        memory = [0, 0]
        memory[self.node] = rss
        return {
            "cpus_allowed": self.cpus,
            "cpu_nodes": (self.node,),
            "workers_nodes": (self.node,) * workers,
            "numa_memory": tuple(memory),
        }

    def launcher_env(self) -> tuple[str, ...]:
        """The torchrun environment of a rank of the node's one data-parallel job."""
        return (
            "LOCAL_RANK=" + str(self.index),
            "MASTER_ADDR=127.0.0.1",
            "MASTER_PORT=29500",
            "RANK=" + str(self.index),
            "WORLD_SIZE=" + str(self.gpus),
        )

    def info(self) -> DeviceInfo:
        s = self.spec
        return DeviceInfo(
            index=self.index,
            name=s.name,
            uuid=f"GPU-{uuid.UUID(int=(_mix64(self.index + 77) << 64) | _mix64(self.index))}",
            pci_bus_id=f"00000000:{0x18 + 0x10 * self.index:02X}:00.0",
            architecture=s.architecture,
            compute_capability=s.compute_capability,
            memory_total=s.memory_total,
            max_sm_clock_mhz=s.max_sm_clock,
            max_mem_clock_mhz=s.max_mem_clock,
            max_graphics_clock_mhz=s.max_sm_clock,
            numa_node=self.node,
            cpu_affinity=self.cpus,
            pcie_topology=tuple(
                "X"
                if j == self.index
                else "PIX"
                if j // 2 == self.index // 2
                else "NODE"
                if (0 if j < self.gpus / 2 or self.gpus == 1 else 1) == self.node
                else "SYS"
                for j in range(self.gpus)
            ),
            nvlink_remote=tuple(NVSWITCHES[k % len(NVSWITCHES)] for k in range(self.links)),
            nvlink_version=4 if self.links else None,
            default_app_sm_clock_mhz=s.default_app_sm_clock,
            default_app_mem_clock_mhz=s.max_mem_clock,
            temp_slowdown_c=s.temp_slowdown,
            temp_shutdown_c=s.temp_shutdown,
            temp_gpu_max_c=s.temp_gpu_max,
            temp_mem_max_c=s.temp_mem_max,
            power_limit_w=self.limit,
            power_default_limit_w=s.power_default,
            power_min_limit_w=s.power_min,
            power_max_limit_w=s.power_default,
            pcie_max_gen=min(s.pcie_gen, self.host_pcie_gen),
            pcie_max_width=16,
            pcie_gpu_max_gen=s.pcie_gen,
            persistence_mode=True,
            compute_mode="Default",
            mig_mode=False,
            ecc_enabled=True,
            driver_version=DRIVER_VERSION,
            cuda_driver_version=CUDA_DRIVER_VERSION,
            gpm_supported=s.gpm,
        )

    def read(self, t: float) -> _Reading:
        return _BY_NAME[self.scenario].read(self, t)

    # -- shared shape of a training load ------------------------------------------
    def _training(
        self,
        t: float,
        *,
        util: float,
        clock_factor: float,
        temp: float,
        power: float,
        mem_frac: float,
        reasons: int = 0,
        rx: float = 2.2e9,
        tx: float = 0.35e9,
        link: tuple[int, int] | None = None,
        cpu: float = 135.0,
        workers: int = 8,
        command: str | None = None,
        threads: int = 48,
        env: tuple[str, ...] | None = None,
        runtime: str = "12.4",
        libraries: tuple[str, ...] = (),
        util_samples: tuple[float, ...] = (),
        worker_cpu: float = 62.0,
    ) -> _Reading:
        s, n = self.spec, self.noise
        gen, width = link if link is not None else (min(s.pcie_gen, self.host_pcie_gen), 16)
        mem_used = int(s.memory_total * min(mem_frac, 0.995))
        sample = GpuSample(
            index=self.index,
            util_gpu=round(min(100.0, max(0.0, util)), 0),
            util_mem=round(min(100.0, max(0.0, util * 0.55 + n.around(_UTIL_MEM, t, 0, 3))), 0),
            sm_activity=round(util * 0.82, 1) if s.gpm else None,
            tensor_activity=round(util * 0.47, 1) if s.gpm else None,
            sm_clock_mhz=int(s.max_sm_clock * clock_factor / 15) * 15,
            mem_clock_mhz=s.max_mem_clock,
            graphics_clock_mhz=int(s.max_sm_clock * clock_factor / 15) * 15,
            app_sm_clock_mhz=s.default_app_sm_clock,
            temp_c=round(temp, 0),
            mem_temp_c=round(temp + 6, 0) if s.temp_mem_max is not None else None,
            temp_margin_c=round(s.temp_slowdown - temp, 0),
            util_samples=util_samples,
            fan_pct=None,
            power_w=round(power, 1),
            power_limit_w=self.limit,
            pstate=0,
            clock_reasons=reasons,
            mem_used=mem_used,
            mem_free=s.memory_total - mem_used,
            mem_total=s.memory_total,
            pcie_gen=gen,
            pcie_width=width,
            pcie_rx_bps=max(0.0, rx * (0.85 + 0.3 * n(_RX, t))),
            pcie_tx_bps=max(0.0, tx * (0.8 + 0.4 * n(_TX, t))),
            pcie_replay_count=0,
            ecc_volatile_corrected=0,
            ecc_volatile_uncorrected=0,
            remapped_rows_pending=False,
            energy_j=round(power * t + 1.0e6 * (self.index + 1), 1),
            # The driver's violation counters: seconds held since the driver loaded (an hour
            # before the scenario began), growing while the scenario's reason holds.
            violation_power_s=3600.0 * 0.02 + (t if reasons & ce.SW_POWER_CAP else 0.0),
            violation_thermal_s=3600.0 * 0.01 + (t if reasons & ce.THERMAL_BITS else 0.0),
            violation_board_s=0.0,
            violation_reliability_s=0.0,
            **self.topology(t),  # type: ignore[arg-type]
        )
        rss = int((11.5 + 0.4 * n(_RSS, t)) * GIB)
        env = self.launcher_env() if env is None else env
        if any(v.startswith("RANK=") for v in env):  # a rank of the node's one job
            started = self.opened - JOB_AGE_S + 0.4 * self.index
        else:
            started = self.opened - OWN_JOB_AGE_S - OWN_JOB_STEP_S * self.index
        process = ProcessSample(
            pid=self.pid,
            gpu_index=self.index,
            gpu_memory=max(0, mem_used - 600 * MIB),
            kind="compute",
            name="python",
            user="mlteam",
            command=command
            or f"python train.py --model llama-3-8b --batch-size 16 --local-rank {self.index}",
            cpu_percent=round(cpu, 1),
            rss=rss,
            threads=threads,
            children=workers,
            cuda_runtime=runtime,
            env=env,
            ppid=2000,
            cuda_libraries=libraries,
            cuda_runtime_evidence=f"libcudart.so.{runtime}" if runtime != "12.4" else None,
            started=started,
            sm_util=sample.util_gpu,  # the GPU's one process: all of its utilisation
            **self.near(rss, workers),  # type: ignore[arg-type]
        )
        spread = 14.0 if worker_cpu < 90.0 else 1.0  # a saturated worker sits at its core
        cores = tuple(
            min(100.0, n.around(_WORKER_CORES + k, t, worker_cpu, spread)) for k in range(workers)
        )
        if workers:
            process = replace(
                process,
                workers_cpu_percent=round(sum(cores), 1),
                workers_active=sum(1 for c in cores if c >= WORKER_ACTIVE_PCT),
            )
        return _Reading(sample, process, cores)

    def idle(self, t: float) -> _Reading:
        s, n = self.spec, self.noise
        used = 534 * MIB
        sample = GpuSample(
            index=self.index,
            util_gpu=0.0,
            util_mem=0.0,
            sm_activity=0.0 if s.gpm else None,
            tensor_activity=0.0 if s.gpm else None,
            sm_clock_mhz=345,
            mem_clock_mhz=s.max_mem_clock,
            graphics_clock_mhz=345,
            app_sm_clock_mhz=s.default_app_sm_clock,
            temp_c=round(n.around(_UTIL, t, 33.0, 0.6), 0),
            mem_temp_c=31.0 if s.gpm else None,
            temp_margin_c=s.temp_slowdown - 33.0,
            fan_pct=None,
            power_w=round(n.around(_POWER, t, s.idle_power, 1.5), 1),
            power_limit_w=s.power_default,
            pstate=0,
            clock_reasons=ce.GPU_IDLE,
            mem_used=used,
            mem_free=s.memory_total - used,
            mem_total=s.memory_total,
            pcie_gen=1,  # links downshift when idle to save power: normal
            pcie_width=16,
            pcie_rx_bps=n.around(_RX, t, 40e3, 20e3),
            pcie_tx_bps=n.around(_TX, t, 30e3, 15e3),
            pcie_replay_count=0,
            ecc_volatile_corrected=0,
            ecc_volatile_uncorrected=0,
            remapped_rows_pending=False,
            energy_j=round(s.idle_power * t + 1.0e6 * (self.index + 1), 1),
            **self.topology(t),  # type: ignore[arg-type]
        )
        return _Reading(sample, None, ())

    def healthy(self, t: float) -> _Reading:
        n, s = self.noise, self.spec
        return self._training(
            t,
            util=n.around(_UTIL, t, 97.0, 2.5),
            clock_factor=n.around(_CLOCK, t, 0.985, 0.012),
            temp=_approach(48.0, 71.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, 0.82 * s.power_default, 25.0),
            mem_frac=0.76 + 0.004 * n(_MEM, t),
        )

    def thermal(self, t: float) -> _Reading:
        n, s = self.noise, self.spec
        # Heats towards 91.5 °C; HW slowdown holds it just above the slowdown limit.
        temp = min(_approach(62.0, 91.5, t, 10.0), s.temp_slowdown + 0.5 + n(_TEMP, t))
        reasons = 0
        if temp >= (s.temp_gpu_max or s.temp_slowdown):
            reasons |= ce.SW_THERMAL
        if temp >= s.temp_slowdown:
            reasons |= ce.HW_THERMAL
        factor = 1.0 - 0.30 * min(1.0, max(0.0, (temp - 84.0) / 5.0))
        return self._training(
            t,
            util=n.around(_UTIL, t, 98.0, 1.5),
            clock_factor=factor * n.around(_CLOCK, t, 0.995, 0.004),
            temp=temp,
            power=0.82 * s.power_default * factor**1.3 + n.around(_POWER, t, 0, 12.0),
            mem_frac=0.75 + 0.004 * n(_MEM, t),
            reasons=reasons,
        )

    def powercap(self, t: float) -> _Reading:
        """A power limit set below the board's default (a site policy, a forgotten
        nvidia-smi -pl): capped all the time, clocks well below where the default holds."""
        n = self.noise
        return self._training(
            t,
            util=n.around(_UTIL, t, 99.0, 1.0),
            clock_factor=n.around(_CLOCK, t, 0.62, 0.02),
            temp=_approach(50.0, 66.0, t, 35.0) + n.around(_TEMP, t, 0, 0.5),
            power=self.limit * n.around(_POWER, t, 0.993, 0.006),
            mem_frac=0.71 + 0.004 * n(_MEM, t),
            reasons=ce.SW_POWER_CAP,
        )

    def at_power_limit(self, t: float) -> _Reading:
        """A healthy big job at the board's default limit, as an H200 runs bf16 GEMMs: 692 W
        of 700, the SW power cap set all the time, the SM clock at 76 % of its maximum."""
        n, s = self.noise, self.spec
        return self._training(
            t,
            util=n.around(_UTIL, t, 99.0, 0.8),
            clock_factor=n.around(_CLOCK, t, 0.76, 0.01),
            temp=_approach(50.0, 68.0, t, 35.0) + n.around(_TEMP, t, 0, 0.5),
            power=s.power_default * n.around(_POWER, t, 0.989, 0.004),
            mem_frac=0.74 + 0.004 * n(_MEM, t),
            reasons=ce.SW_POWER_CAP,
        )

    def vram(self, t: float) -> _Reading:
        n, s = self.noise, self.spec
        # A leak: memory grows steadily toward the total (the plateau of a framework's
        # cache would be calm); at the ceiling the allocator retries and the GPU stalls.
        frac = 0.55 + 0.435 * min(1.0, t / 200.0) + 0.002 * n(_MEM, t)
        full = t >= 200.0
        stall = full and n(_STEP_BUSY, t) < 0.5
        util = n(_STEP_IDLE_UTIL, t) * 3.0 if stall else n.around(_UTIL, t, 93.0, 4.0)
        return self._training(
            t,
            util=util,
            clock_factor=n.around(_CLOCK, t, 0.98, 0.01),
            temp=_approach(50.0, 70.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, 0.78 * s.power_default, 25.0),
            mem_frac=frac,
            command="python train.py --model llama-3-8b --batch-size 48 --seq-len 8192",
        )

    def pcie(self, t: float) -> _Reading:
        n, s = self.noise, self.spec
        capacity = link_bandwidth(3, 8) or 0.0
        # Waiting on host-to-device copies: utilisation sags with every transfer.
        return self._training(
            t,
            util=n.around(_UTIL, t, 64.0, 10.0),
            clock_factor=n.around(_CLOCK, t, 0.99, 0.01),
            temp=_approach(45.0, 63.0, t, 40.0) + n.around(_TEMP, t, 0, 0.5),
            power=n.around(_POWER, t, 0.62 * s.power_default, 15.0),
            mem_frac=0.58,
            rx=0.86 * capacity,
            tx=0.05 * capacity,
            link=(3, 8),
            cpu=240.0,
            workers=12,
        )

    def loader_bound(self, t: float) -> _Reading:
        """Starvation as the driver shows it: four data-loader workers each burn a core and
        cannot keep up, the GPU busy 30-60 % tick after tick and never idle, the driver's
        samples (six a second) alike."""
        n, s = self.noise, self.spec
        util = n.around(_UTIL, t, 42.0, 9.0)
        samples = tuple(
            round(min(100.0, max(0.0, util + 12.0 * (n(_STEP_IDLE_UTIL, t + k / 6) - 0.5))), 0)
            for k in range(6)
        )
        return self._training(
            t,
            util=util,
            clock_factor=n.around(_CLOCK, t, 0.99, 0.005),
            temp=_approach(45.0, 57.0, t, 40.0) + n.around(_TEMP, t, 0, 0.5),
            power=n.around(_POWER, t, 0.45 * s.power_default, 15.0),
            mem_frac=0.38,
            cpu=n.around(_PROC_CPU, t, 41.0, 3.0),
            workers=4,
            threads=12,
            command="python train_resnet.py --data /data/imagenet --workers 4 --batch-size 256",
            env=(),  # its own single-process job: no rank of the node's training job
            util_samples=samples,
            worker_cpu=99.5,
        )

    def starved(self, t: float) -> _Reading:
        n = self.noise
        # One Python process decodes every batch itself (num_workers=0): the GPU finishes
        # a step in a fraction of a second, then waits for the next batch.
        busy = n(_STEP_BUSY, t) < 0.3
        util = n.around(_UTIL, t, 93.0, 4.0) if busy else n(_STEP_IDLE_UTIL, t) * 3.0
        reading = self._training(
            t,
            util=util,
            clock_factor=0.99 if busy else 0.90,
            temp=_approach(45.0, 58.0, t, 40.0) + n.around(_TEMP, t, 0, 0.5),
            power=n.around(_POWER, t, 520.0, 20.0) if busy else n.around(_POWER, t, 140.0, 10.0),
            mem_frac=0.42,
            cpu=n.around(_PROC_CPU, t, 99.5, 1.2),
            workers=0,
            threads=5,
            command="python finetune.py --data /data/imagenet --num-workers 0",
            env=(),  # its own single-process job: no rank of the node's training job
        )
        return _Reading(reading.sample, reading.process, (min(100.0, 99.0 + n(_MAIN_CORE, t)),))

    # -- topology ------------------------------------------------------------------
    def numa(self, t: float) -> _Reading:
        """A rank launched without binding on a two-socket node: the launcher pinned it and
        its loader workers to the other socket, and its memory followed; the GPU waits."""
        n, s = self.noise, self.spec
        busy = n(_STEP_BUSY, t) < 0.7
        reading = self._training(
            t,
            util=n.around(_UTIL, t, 92.0, 4.0) if busy else n(_STEP_IDLE_UTIL, t) * 20.0,
            clock_factor=n.around(_CLOCK, t, 0.985, 0.01),
            temp=_approach(48.0, 64.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, 0.6 * s.power_default, 30.0),
            mem_frac=0.7,
            rx=5.5e9,
        )
        assert reading.process is not None
        far = 1 - self.node
        half = HOST_CPUS // 2
        memory = [0, 0]
        rss = reading.process.rss or 0
        memory[far], memory[self.node] = int(rss * 0.9), rss - int(rss * 0.9)
        process = replace(
            reading.process,
            cpus_allowed=f"{far * half}-{far * half + half - 1}",
            cpu_nodes=(far,),
            workers_nodes=(far,) * (reading.process.children or 0),
            numa_memory=tuple(memory),
        )
        return _Reading(reading.sample, process, reading.host_cores)

    def nvlink_down(self, t: float) -> _Reading:
        """Two NVLinks of the GPU went down (Xid 74) and a third one retransmits."""
        reading = self.healthy(t)
        links = list(self._nvlinks)
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
        return _Reading(sample, reading.process, reading.host_cores)

    # -- calm verdicts: healthy jobs that look alarming to a naive rule ---------------
    def pytorch_plateau(self, t: float) -> _Reading:
        """PyTorch's caching allocator: ~97 % of the card reserved from the first steps
        and flat after (freed blocks stay reserved)."""
        n, s = self.noise, self.spec
        return self._training(
            t,
            util=n.around(_UTIL, t, 96.0, 3.0),
            clock_factor=n.around(_CLOCK, t, 0.985, 0.012),
            temp=_approach(48.0, 72.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, 0.8 * s.power_default, 25.0),
            mem_frac=0.972 + 0.002 * n(_MEM, t),
            env=(*self.launcher_env(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
            libraries=(
                "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so",
                "/opt/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so",
            ),
        )

    def sweep(self, t: float) -> _Reading:
        """A hyperparameter sweep: independent single-GPU runs of one script; the odd
        GPUs train a smaller model and run at lower utilisation. No peers: no straggler."""
        n, s = self.noise, self.spec
        lr = ("1e-4", "3e-4", "1e-3", "3e-3")[self.index % 4]
        small = self.index % 2 == 1
        return self._training(
            t,
            util=n.around(_UTIL, t, 70.0 if small else 97.0, 3.0),
            clock_factor=n.around(_CLOCK, t, 0.86 if small else 0.985, 0.01),
            temp=_approach(48.0, 66.0 if small else 71.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, (0.55 if small else 0.8) * s.power_default, 20.0),
            mem_frac=0.6,
            command=f"python train.py --lr {lr} --seed {self.index}",
            env=(),
        )

    def gen5_in_gen4(self, t: float) -> _Reading:
        """A Gen5 card in a Gen4 host: Gen4 x16 under load is the most the host allows."""
        reading = self.healthy(t)
        return reading

    def warm_4090(self, t: float) -> _Reading:
        """An RTX 4090 under load at its 83 °C target: fans hold it there, no throttling."""
        n, s = self.noise, self.spec
        return self._training(
            t,
            util=n.around(_UTIL, t, 98.0, 1.5),
            clock_factor=n.around(_CLOCK, t, 0.88, 0.01),
            temp=min(83.0, _approach(55.0, 83.4, t, 25.0)) + n.around(_TEMP, t, 0, 0.4),
            power=n.around(_POWER, t, 0.93 * s.power_default, 12.0),
            mem_frac=0.8,
            env=(),
        )

    def hw_blip(self, t: float) -> _Reading:
        """An idle GPU with a one-second HW slowdown now and then (a load change, a PSU
        transient): a reason bit is an instant, not a state."""
        reading = self.idle(t)
        if int(t) % 60 == 17:
            sample = replace(reading.sample, clock_reasons=ce.GPU_IDLE | ce.HW_SLOWDOWN)
            return _Reading(sample, reading.process, reading.host_cores)
        return reading

    def minor_compat(self, t: float) -> _Reading:
        """A CUDA 12.6 runtime on a driver for CUDA 12.4: minor-version compatibility."""
        n, s = self.noise, self.spec
        return self._training(
            t,
            util=n.around(_UTIL, t, 96.0, 2.5),
            clock_factor=n.around(_CLOCK, t, 0.985, 0.012),
            temp=_approach(48.0, 70.0, t, 40.0) + n.around(_TEMP, t, 0, 0.6),
            power=n.around(_POWER, t, 0.8 * s.power_default, 25.0),
            mem_frac=0.7,
            runtime="12.6",
            env=(),
        )


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    card: CardSpec
    read: Callable[[_Gpu, float], _Reading]
    #: positions of this scenario in the default mix (the mix of N GPUs takes the first N)
    mix_slots: tuple[int, ...] = ()
    #: the host's PCIe generation when it is older than the card's
    host_pcie_gen: int | None = None
    #: the enforced power limit as a share of the default, when the scenario lowered it
    power_limit_share: float | None = None


# Every scenario, once: its card, what it does, and where it sits in the default mix, so
# even 4 GPUs show several causes at once.
SCENARIO_TABLE: Final[tuple[Scenario, ...]] = (
    Scenario("healthy", H100_SXM, _Gpu.healthy, mix_slots=(0, 7)),
    Scenario("thermal", H100_SXM, _Gpu.thermal, mix_slots=(1,)),
    Scenario("powercap", H100_SXM, _Gpu.powercap, mix_slots=(4,), power_limit_share=0.7),
    Scenario("vram", H100_SXM, _Gpu.vram, mix_slots=(2,)),
    # a Gen4 x16 card running at Gen3 x8
    Scenario("pcie", A100_PCIE, _Gpu.pcie, mix_slots=(5,)),
    Scenario("starved", H100_SXM, _Gpu.starved, mix_slots=(3,)),
    Scenario("loader-bound", H100_SXM, _Gpu.loader_bound),
    Scenario("idle", H100_SXM, _Gpu.idle, mix_slots=(6,)),
    # Calm verdicts, outside the default mix: each looks alarming to a naive rule.
    Scenario("pytorch-plateau", H100_SXM, _Gpu.pytorch_plateau),
    Scenario("sweep", H100_SXM, _Gpu.sweep),
    Scenario("gen5-in-gen4", H100_PCIE, _Gpu.gen5_in_gen4, host_pcie_gen=4),
    Scenario("warm-4090", RTX_4090, _Gpu.warm_4090),
    Scenario("hw-blip", H100_SXM, _Gpu.hw_blip),
    Scenario("minor-compat", H100_SXM, _Gpu.minor_compat),
    Scenario("at-power-limit", H100_SXM, _Gpu.at_power_limit),
    # Topology, outside the default mix: a rank on the far socket, NVLinks down.
    Scenario("numa", H100_SXM, _Gpu.numa),
    Scenario("nvlink-down", H100_SXM, _Gpu.nvlink_down),
)
_BY_NAME: Final = {scenario.name: scenario for scenario in SCENARIO_TABLE}
SCENARIOS: Final[tuple[str, ...]] = tuple(_BY_NAME)
MIX_ORDER: Final[tuple[str, ...]] = tuple(
    name for _, name in sorted((slot, sc.name) for sc in SCENARIO_TABLE for slot in sc.mix_slots)
)


class SimulatedSource:
    """N simulated GPUs, each running a scenario; deterministic for a seed and clock."""

    label = "SIMULATED"
    kind = SourceKind.SIMULATED

    def __init__(
        self,
        scenarios: Sequence[str],
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        hostname: str = "demo-node",
    ) -> None:
        unknown = [s for s in scenarios if s not in _BY_NAME]
        if unknown or not scenarios:
            raise ValueError(f"unknown scenarios: {unknown}")
        self.scenarios = tuple(scenarios)
        self._clock = clock
        self._hostname = hostname
        self._gpus = [_Gpu(i, s, seed, len(scenarios)) for i, s in enumerate(self.scenarios)]
        self._start: float | None = None
        self._host_noise = _Noise(seed, 10_000)

    def open(self) -> tuple[DeviceInfo, ...]:
        self._begin(self._clock())
        return tuple(gpu.info() for gpu in self._gpus)

    def _begin(self, now: float) -> None:
        self._start = now
        for gpu in self._gpus:
            gpu.opened = float(math.floor(now))

    def read(self) -> Frame:
        now = self._clock()
        start = self._start
        if start is None:
            self._begin(now)
            start = now
        t = max(0.0, now - start)
        readings = [gpu.read(t) for gpu in self._gpus]
        return Frame(
            time=now,
            gpus=tuple(r.sample for r in readings),
            host=self._host(t, readings),
            processes=tuple(r.process for r in readings if r.process is not None),
        )

    def close(self) -> None:
        self._start = None

    def _host(self, t: float, readings: Sequence[_Reading]) -> HostSample:
        n = self._host_noise
        per_cpu = [n.around(_HOST_CORES + k, t, 1.5, 1.0) for k in range(HOST_CPUS)]
        slot = 0
        for reading in readings:
            for busy in reading.host_cores:
                per_cpu[slot % HOST_CPUS] = max(per_cpu[slot % HOST_CPUS], busy)
                slot += 1
            if reading.process is not None:  # the main training thread
                per_cpu[slot % HOST_CPUS] = max(per_cpu[slot % HOST_CPUS], 60.0)
                slot += 1
        per_cpu = [round(min(100.0, max(0.0, v)), 1) for v in per_cpu]
        busy_cores = sum(per_cpu) / 100.0
        return HostSample(
            cpu_percent=round(sum(per_cpu) / HOST_CPUS, 1),
            per_cpu_percent=tuple(per_cpu),
            cpu_count=HOST_CPUS,
            load_1=round(busy_cores + n(_HOST_LOAD, t), 2),
            load_5=round(busy_cores * 0.95, 2),
            load_15=round(busy_cores * 0.9, 2),
            mem_total=2048 * GIB,
            mem_available=int((1610 + 8 * n(_HOST_MEM, t)) * GIB),
            swap_total=0,
            swap_used=0,
            iowait_pct=round(n.around(_HOST_IOWAIT, t, 0.6, 0.3), 2),
            disk_read_bps=n.around(_HOST_DISK, t, 180e6, 40e6),
            hostname=self._hostname,
            uptime_s=BOOT_AGE_S + t,
        )
