"""Names that cross modules, defined once: source kinds, severities, note kinds, rule ids
and the metrics the history keeps.

Each is a ``str`` enum: its value is what files, metrics and the screen show, so a
snapshot written before these types existed reads back the same.
"""

from __future__ import annotations

from enum import Enum


class _Name(str, Enum):
    """A string with a closed set of values; prints as its value on every Python."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class SourceKind(_Name):
    LIVE = "live"
    SIMULATED = "simulated"
    REPLAY = "replay"
    REMOTE = "remote"


class Severity(_Name):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.CRITICAL: 2}


class NoteKind(_Name):
    """What a source's note is about, so each surface can place it without reading it."""

    #: GPU processes whose PIDs belong to another PID namespace (a container)
    PID_NAMESPACE = "pid-namespace"
    #: a remote node that did not answer this tick
    NODE_DOWN = "node-down"
    #: a remote node that gave no GPUs when the source opened
    NODE_EMPTY = "node-empty"
    #: rules that cannot run on this source's readings
    RULES_BLIND = "rules-blind"
    #: a GPU that fell off the bus
    GPU_LOST = "gpu-lost"
    GENERAL = "general"


class RuleId(_Name):
    THERMAL_THROTTLE = "thermal-throttle"
    THERMAL_HOT = "thermal-hot"
    HW_SLOWDOWN = "hw-slowdown"
    POWER_CAP = "power-cap"
    POWER_LIMIT_LOWERED = "power-limit-lowered"
    CLOCKS_LIMITED = "clocks-limited"
    CLOCKS_HELD = "clocks-held"
    VRAM_PRESSURE = "vram-pressure"
    HOST_MEMORY_PRESSURE = "host-memory-pressure"
    IDLE_ALLOCATED = "idle-allocated"
    PCIE_LINK_DEGRADED = "pcie-link-degraded"
    PCIE_SATURATED = "pcie-saturated"
    PCIE_ERRORS = "pcie-errors"
    PCIE_HOST_LIMITED = "pcie-host-limited"
    INPUT_STARVED = "input-starved"
    IO_BOUND = "io-bound"
    STRAGGLER = "straggler"
    CUDA_LAUNCH_BLOCKING = "cuda-launch-blocking"
    CUDA_DRIVER_MISMATCH = "cuda-driver-mismatch"
    PERSISTENCE_OFF = "persistence-off"
    GPU_ERRORS = "gpu-errors"
    MEMORY_HEALTH = "memory-health"
    GPU_SHARED = "gpu-shared"
    NOT_REPORTING = "not-reporting"
    VRAM_RESERVED = "vram-reserved"
    UNDER_USED = "under-used"
    NUMA_MISMATCH = "numa-mismatch"
    PCIE_SHARED_PATH = "pcie-shared-path"
    NVLINK_DOWN = "nvlink-down"
    NVLINK_ERRORS = "nvlink-errors"
    FABRIC_NOT_READY = "fabric-not-ready"
    # stuck, not slow: a hung collective, a GPU busy without work (advisor/hang.py)
    COLLECTIVE_HANG = "collective-hang"
    BUSY_NO_WORK = "busy-no-work"
    # a fan that does not cool (advisor/cooling.py), ranks placed wrong (advisor/placement.py)
    FAN_FAULT = "fan-fault"
    RANKS_CROWDED = "ranks-crowded"
    STRAY_CONTEXTS = "stray-contexts"
    # configuration: the job's cgroup, shared memory and limits (advisor/configuration.py)
    CPU_THROTTLED = "cpu-throttled"
    CGROUP_MEMORY = "cgroup-memory"
    CPUSET_SMALL = "cpuset-small"
    SHM_SMALL = "shm-small"
    OPEN_FILES = "open-files"
    JOB_SWAPPED = "job-swapped"
    # ... its environment (advisor/environment.py)
    NO_CUDA_CACHING = "no-cuda-caching"
    DISTRIBUTED_DEBUG = "distributed-debug"
    NCCL_P2P_OFF = "nccl-p2p-off"
    NCCL_IB_OFF = "nccl-ib-off"
    OMP_OVERSUBSCRIBED = "omp-oversubscribed"
    VISIBLE_DEVICES_ORDER = "visible-devices-order"
    # ... the node's and the GPUs' settings (advisor/node_settings.py)
    P2P_UNAVAILABLE = "p2p-unavailable"
    COMPUTE_MODE = "compute-mode"
    MODE_PENDING = "mode-pending"
    CLOCKS_LOCKED = "clocks-locked"
    CPU_GOVERNOR = "cpu-governor"
    THP_DEFRAG = "thp-defrag"
    NUMA_BALANCING = "numa-balancing"


#: rules that need process or host readings, which a remote exporter does not carry
RULES_NEEDING_HOST: tuple[RuleId, ...] = (
    RuleId.INPUT_STARVED,
    RuleId.IO_BOUND,
    RuleId.HOST_MEMORY_PRESSURE,
    RuleId.IDLE_ALLOCATED,
    RuleId.CUDA_LAUNCH_BLOCKING,
    RuleId.CUDA_DRIVER_MISMATCH,
    RuleId.STRAGGLER,
    RuleId.UNDER_USED,
    RuleId.NUMA_MISMATCH,
    RuleId.COLLECTIVE_HANG,
    RuleId.RANKS_CROWDED,
    RuleId.STRAY_CONTEXTS,
)
#: the checks that look only at the jobs' and the node's settings (cgroups, /dev/shm,
#: limits, the host's files), which only a local source reads: from a simulated, remote or
#: recorded source they find nothing because they were given nothing, which is no "ok"
SETTINGS_ONLY = frozenset(
    {
        RuleId.CPU_THROTTLED,
        RuleId.CGROUP_MEMORY,
        RuleId.CPUSET_SMALL,
        RuleId.SHM_SMALL,
        RuleId.OPEN_FILES,
        RuleId.JOB_SWAPPED,
        RuleId.P2P_UNAVAILABLE,
        RuleId.NCCL_IB_OFF,
        RuleId.CPU_GOVERNOR,
        RuleId.THP_DEFRAG,
        RuleId.NUMA_BALANCING,
        RuleId.CLOCKS_LOCKED,  # judged only where the configuration is read (its own guard)
    }
)
#: the checks of the GPU processes' environments and CUDA libraries: a source that reads
#: no processes (a remote exporter, a Prometheus server) gives them nothing to look at
PROCESS_ONLY = frozenset(
    {
        RuleId.CUDA_LAUNCH_BLOCKING,
        RuleId.CUDA_DRIVER_MISMATCH,
        RuleId.NO_CUDA_CACHING,
        RuleId.DISTRIBUTED_DEBUG,
        RuleId.NCCL_P2P_OFF,
        RuleId.OMP_OVERSUBSCRIBED,
        RuleId.VISIBLE_DEVICES_ORDER,
    }
)


class ConfigArea(_Name):
    """A part of a job's or the node's configuration a settings reader reads: where one
    could not be read, the reader says which and why (``JobSettings.unreadable``)."""

    CPU = "cpu"  # the cgroup's CPU quota and throttling
    MEMORY = "memory"  # its memory limit
    CPUSET = "cpuset"
    SHM = "shm"  # /dev/shm in the job's mount namespace
    FILES = "files"  # the open-files limit and the files open
    SWAP = "swap"  # the job's memory in swap
    GOVERNOR = "governor"  # the CPU frequency governor
    THP = "thp"
    NUMA = "numa"  # automatic NUMA balancing
    INFINIBAND = "infiniband"
    DEVICES = "devices"  # who holds a GPU's device file


class Metric(_Name):
    """A GPU reading the history keeps; the value is the ``GpuSample`` field it comes from."""

    UTIL_GPU = "util_gpu"
    UTIL_MEM = "util_mem"
    SM_ACTIVITY = "sm_activity"
    TENSOR_ACTIVITY = "tensor_activity"
    SM_CLOCK_MHZ = "sm_clock_mhz"
    MEM_CLOCK_MHZ = "mem_clock_mhz"
    TEMP_C = "temp_c"
    MEM_TEMP_C = "mem_temp_c"
    FAN_PCT = "fan_pct"
    FAN_RPM = "fan_rpm"
    POWER_W = "power_w"
    POWER_LIMIT_W = "power_limit_w"
    MEM_USED = "mem_used"
    MEM_TOTAL = "mem_total"
    PCIE_GEN = "pcie_gen"
    PCIE_WIDTH = "pcie_width"
    PCIE_RX_BPS = "pcie_rx_bps"
    PCIE_TX_BPS = "pcie_tx_bps"
    PCIE_REPLAY_COUNT = "pcie_replay_count"
    ECC_VOLATILE_UNCORRECTED = "ecc_volatile_uncorrected"
    ECC_VOLATILE_CORRECTED = "ecc_volatile_corrected"
    #: cumulative seconds throttled, by cause: their growth over a window is the time held
    VIOLATION_POWER_S = "violation_power_s"
    VIOLATION_THERMAL_S = "violation_thermal_s"
    VIOLATION_BOARD_S = "violation_board_s"
    VIOLATION_RELIABILITY_S = "violation_reliability_s"
    #: NVLink CRC, replay and recovery errors, all links together (cumulative)
    NVLINK_ERRORS = "nvlink_errors"


class HostMetric(_Name):
    """A host reading the history keeps; the value is the ``HostSample`` field."""

    CPU_PERCENT = "cpu_percent"
    IOWAIT_PCT = "iowait_pct"
    MEM_AVAILABLE = "mem_available"
    SWAP_USED = "swap_used"
    DISK_READ_BPS = "disk_read_bps"
    RUN_QUEUE = "run_queue"
