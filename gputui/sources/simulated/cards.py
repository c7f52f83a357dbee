"""The simulated boards and the node they sit in: what each card is, what the node runs."""

from __future__ import annotations

from gputui.core.config import DEMO_MAX_GPUS, DEMO_MIX
from gputui.core.records import frozen

MIX = DEMO_MIX
MAX_GPUS = DEMO_MAX_GPUS
GIB = 1024**3
MIB = 1024**2


@frozen
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
