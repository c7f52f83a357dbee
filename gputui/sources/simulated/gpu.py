"""One simulated GPU: its noise, its static facts, and the shape of a training load that
every scenario draws from."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from gputui.core import clock_events as ce
from gputui.core.config import WORKER_ACTIVE_PCT
from gputui.core.model import DeviceInfo, GpuSample, NvLinkSample, ProcessSample
from gputui.core.records import frozen
from gputui.sources.simulated import noise
from gputui.sources.simulated.cards import (
    CUDA_DRIVER_VERSION,
    DRIVER_VERSION,
    GIB,
    H100_SXM,
    HOST_CPUS,
    JOB_AGE_S,
    MIB,
    NVLINKS,
    NVSWITCHES,
    OWN_JOB_AGE_S,
    OWN_JOB_STEP_S,
    CardSpec,
)

LAUNCHER_PID = 2000  # torchrun, the parent of the node's job's ranks
_VENV = "/home/mlteam/venvs/llm/bin"
_OWNERS = ("ana", "ravi", "kim", "lee")


@frozen
class Reading:
    sample: GpuSample
    process: ProcessSample | None
    host_cores: tuple[float, ...]  # CPU % of the cores this GPU's job keeps busy


@frozen
class Scenario:
    """What a simulated GPU runs: its card, and its readings second by second."""

    name: str
    card: CardSpec
    read: Callable[[Gpu, float], Reading]
    #: positions of this scenario in the default mix (the mix of N GPUs takes the first N)
    mix_slots: tuple[int, ...] = ()
    #: the host's PCIe generation when it is older than the card's
    host_pcie_gen: int | None = None
    #: the enforced power limit as a share of the default, when the scenario lowered it
    power_limit_share: float | None = None


@frozen
class Load:
    """A second of a training job, as a scenario shapes it: ``power`` is what the job
    draws while its kernels run ``power_util`` % of the time; ``cap`` a power limiter
    holding the board (none: its limit only); ``link`` the PCIe link trained (generation,
    width; none: the best card and host allow); the rest the job's own process: its CPU,
    data-loader workers and their CPU, command, threads, launcher environment (none: a
    torchrun rank's), CUDA runtime and libraries."""

    util: float
    clock_factor: float
    temp: float
    power: float
    mem_frac: float
    power_util: float
    cap: float | None = None
    reasons: int = 0
    rx: float = 2.2e9
    tx: float = 0.35e9
    link: tuple[int, int] | None = None
    cpu: float = 135.0
    workers: int = 8
    command: str | None = None
    threads: int = 48
    env: tuple[str, ...] | None = None
    runtime: str = "12.4"
    libraries: tuple[str, ...] = ()
    util_samples: tuple[float, ...] = ()
    worker_cpu: float = 62.0


#: what holding the SM clock at its maximum adds to a board's idle draw (as a share of
#: it): an H100 SXM idles at ~72 W at 345 MHz and ~115 W with its clocks held up, no work
CLOCKED_IDLE_SHARE = 0.6


def board_draw(
    spec: CardSpec, clock_factor: float, util: float, power: float, power_util: float
) -> float:
    """A board's draw: its idle draw at this clock, plus the job's share above it in
    proportion to the time its kernels run (NVML's utilisation is that share of each
    sample period, so a GPU busy 30 % of a second draws 30 % of the job's extra power);
    ``power`` is what the job draws at ``power_util``."""
    idle = spec.idle_power * (1.0 + CLOCKED_IDLE_SHARE * min(1.0, max(0.0, clock_factor)))
    load = min(100.0, max(0.0, util)) / power_util
    return idle + (power - idle) * load


class Gpu:
    def __init__(self, index: int, scenario: Scenario, seed: int, gpus: int = 1) -> None:
        self.index = index
        self.scenario = scenario
        self.spec = scenario.card
        self.host_pcie_gen = scenario.host_pcie_gen or self.spec.pcie_gen
        # the enforced power limit: the default, unless the scenario lowered it
        self.limit = self.spec.power_default * (scenario.power_limit_share or 1.0)
        self.noise = noise.Noise(seed, index)
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

    def _uuid_bits(self) -> int:
        return (noise.mix64(self.index + 77) << 64) | noise.mix64(self.index)

    def info(self) -> DeviceInfo:
        s = self.spec
        return DeviceInfo(
            index=self.index,
            name=s.name,
            uuid=f"GPU-{uuid.UUID(int=self._uuid_bits())}",
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

    def read(self, t: float) -> Reading:
        return self.scenario.read(self, t)

    # -- shared shape of a training load ------------------------------------------
    def training(self, t: float, load: Load) -> Reading:
        """A second of a training job. The board draws in proportion to ``load.util`` (near
        its idle draw when the job waits), never over its limit, and with ``load.cap`` (a
        power limiter holding it), never over that."""
        draw = board_draw(self.spec, load.clock_factor, load.util, load.power, load.power_util)
        draw = min(draw, self.limit if load.cap is None else min(load.cap, self.limit))
        sample = self._sample(t, load, draw)
        process, cores = self._process(t, sample, load)
        return Reading(sample, process, cores)

    def _sample(self, t: float, load: Load, power: float) -> GpuSample:
        s, n = self.spec, self.noise
        util, temp, reasons = load.util, load.temp, load.reasons
        link = load.link
        gen, width = link if link is not None else (min(s.pcie_gen, self.host_pcie_gen), 16)
        mem_used = int(s.memory_total * min(load.mem_frac, 0.995))
        clock = int(s.max_sm_clock * load.clock_factor / 15) * 15
        return GpuSample(
            index=self.index,
            util_gpu=round(min(100.0, max(0.0, util)), 0),
            util_mem=round(
                min(100.0, max(0.0, util * 0.55 + n.around(noise.UTIL_MEM, t, 0, 3))), 0
            ),
            sm_activity=round(util * 0.82, 1) if s.gpm else None,
            tensor_activity=round(util * 0.47, 1) if s.gpm else None,
            sm_clock_mhz=clock,
            mem_clock_mhz=s.max_mem_clock,
            graphics_clock_mhz=clock,
            app_sm_clock_mhz=s.default_app_sm_clock,
            temp_c=round(temp, 0),
            mem_temp_c=round(temp + 6, 0) if s.temp_mem_max is not None else None,
            temp_margin_c=round(s.temp_slowdown - temp, 0),
            util_samples=load.util_samples,
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
            pcie_rx_bps=max(0.0, load.rx * (0.85 + 0.3 * n(noise.RX, t))),
            pcie_tx_bps=max(0.0, load.tx * (0.8 + 0.4 * n(noise.TX, t))),
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

    def _process(
        self, t: float, sample: GpuSample, load: Load
    ) -> tuple[ProcessSample, tuple[float, ...]]:
        """The GPU's one process, and its data-loader workers' cores."""
        n = self.noise
        workers, worker_cpu = load.workers, load.worker_cpu
        rss = int((11.5 + 0.4 * n(noise.RSS, t)) * GIB)
        env = self.launcher_env() if load.env is None else load.env
        rank = any(v.startswith("RANK=") for v in env)  # a rank of the node's one job
        if rank:
            started = self.opened - JOB_AGE_S + 0.4 * self.index
        else:
            started = self.opened - OWN_JOB_AGE_S - OWN_JOB_STEP_S * self.index
        spread = 14.0 if worker_cpu < 90.0 else 1.0  # a saturated worker sits at its core
        cores = tuple(
            min(100.0, n.around(noise.WORKER_CORES + k, t, worker_cpu, spread))
            for k in range(workers)
        )
        process = ProcessSample(
            pid=self.pid,
            gpu_index=self.index,
            gpu_memory=max(0, (sample.mem_used or 0) - 600 * MIB),
            kind="compute",
            name="python3",
            # the node's job is the team's; the single-GPU runs are people's own
            user="mlteam" if rank else _OWNERS[self.index % len(_OWNERS)],
            command=load.command
            or f"{_VENV}/python3 -u train.py --model llama-3-8b --batch-size 16"
            f" --local-rank {self.index}",
            cpu_percent=round(load.cpu, 1),
            rss=rss,
            threads=load.threads,
            children=workers,
            cuda_runtime=load.runtime,
            env=env,
            # torchrun started the job's ranks; each own run was started from a shell
            ppid=LAUNCHER_PID if rank else 3000 + 17 * self.index,
            parent_command=(
                f"{_VENV}/python3 {_VENV}/torchrun --nproc-per-node {self.gpus} train.py"
                " --model llama-3-8b --batch-size 16"
                if rank
                else "-bash"
            ),
            cuda_libraries=load.libraries,
            cuda_runtime_evidence=(
                f"libcudart.so.{load.runtime}" if load.runtime != "12.4" else None
            ),
            started=started,
            sm_util=sample.util_gpu,  # the GPU's one process: all of its utilisation
            workers_cpu_percent=round(sum(cores), 1) if workers else None,
            workers_active=sum(1 for c in cores if c >= WORKER_ACTIVE_PCT) if workers else None,
            **self.near(rss, workers),  # type: ignore[arg-type]
        )
        return process, cores
