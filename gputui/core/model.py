"""The data model: immutable readings that flow from a source to every consumer.

Units are fixed here, once: MHz, °C, W, bytes, bytes/s, percent 0-100, J, seconds.
``None`` always means "not supported or unknown" and is never replaced by 0.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any, Final

from gputui.core.clock_events import decode_reasons
from gputui.core.model_checks import clean_readings, clean_text_fields
from gputui.core.names import NoteKind, RuleId, Severity, SourceKind
from gputui.core.records import frozen, record


@frozen
class SourceInfo:
    """Where the readings come from, as every surface names it."""

    label: str  # "NVML", "SIMULATED", "REPLAY"...
    kind: SourceKind
    detail: str | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class DeviceInfo:
    """Facts about one GPU that do not change while gputui runs; read once."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    architecture: str | None = None
    compute_capability: str | None = None
    memory_total: int | None = None
    max_sm_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    max_graphics_clock_mhz: int | None = None
    default_app_sm_clock_mhz: int | None = None
    default_app_mem_clock_mhz: int | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_gpu_max_c: float | None = None
    temp_mem_max_c: float | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    power_min_limit_w: float | None = None
    power_max_limit_w: float | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    pcie_gpu_max_gen: int | None = None
    persistence_mode: bool | None = None
    compute_mode: str | None = None
    mig_mode: bool | None = None
    ecc_enabled: bool | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpm_supported: bool | None = None
    #: the temperature the board regulates its fans and clocks to under load (GeForce's
    #: "target", NVML's acoustic threshold); None where the board has none
    temp_target_c: float | None = None
    #: the node it lives on, and its index there, when read from a remote source
    node: str | None = None
    node_index: int | None = None
    #: the Kubernetes workload on it, from the exporter's pod/namespace/container labels
    pod: str | None = None
    namespace: str | None = None
    container: str | None = None
    #: topology, read once at open: the NUMA node the GPU is attached to, the CPUs near it
    #: (Linux list format, "0-27,56-83")
    numa_node: int | None = None
    cpu_affinity: str | None = None
    #: the PCIe path to every GPU by index, as `nvidia-smi topo -m` abbreviates it: "X"
    #: itself, "BRD" same board, "PIX", "PXB", "PHB", "NODE", "SYS", "" unknown
    pcie_topology: tuple[str, ...] | None = None
    #: per NVLink of this GPU: the PCI bus id of the device at the other end ("" unknown or
    #: down at open); () no NVLink; None: NVLink could not be read
    nvlink_remote: tuple[str, ...] | None = None
    nvlink_version: int | None = None
    #: facts of this record the board, driver or machine does not offer at all (NVML's
    #: NotSupported, a NUMA node of -1), by field name: rules that need them do not apply,
    #: where a reading that is merely missing (no permission) leaves them unjudged
    unsupported: tuple[str, ...] = ()
    #: mode changes that wait for the next GPU reset: the pending ECC and MIG modes (the
    #: modes in effect are ``ecc_enabled`` and ``mig_mode``)
    ecc_pending: bool | None = None
    mig_pending: bool | None = None
    #: its device file is /dev/nvidia<minor_number>
    minor_number: int | None = None
    #: the highest graphics clock the P0 state allows now (nvmlDeviceGetMinMaxClockOfPState):
    #: below ``max_graphics_clock_mhz`` while clocks are locked (nvidia-smi -lgc)
    p0_max_graphics_mhz: int | None = None
    #: peer-to-peer reads and writes to every GPU by index (nvmlDeviceGetP2PStatus), as
    #: `nvidia-smi topo -p2p` abbreviates them: "X" itself, "OK", "CNS" chipset, "GNS" GPU,
    #: "TNS" topology not supported, "DIS" disabled by the driver, "NS" not supported, "U"
    #: unknown, "" not read; None where not read at all
    p2p_read: tuple[str, ...] | None = None
    p2p_write: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class XidEvent:
    """A critical error the driver reported for a GPU (an Xid), when it happened."""

    code: int
    time: float  # seconds since the epoch, by the source's clock when it was read


@frozen
class MigInstance:
    """One MIG instance of a GPU in MIG mode: its slice, memory and processes."""

    gpu_instance_id: int
    compute_instance_id: int | None = None
    profile: str | None = None  # "1g.10gb", as nvidia-smi names it
    uuid: str | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    #: % of the instance's SMs busy (GPM, Hopper+); None where the driver gives no figure
    sm_activity: float | None = None
    #: PIDs of the processes running in this instance
    pids: tuple[int, ...] = ()
    #: % of time the instance's graphics engine was busy (DCGM's GR_ENGINE_ACTIVE): a MIG
    #: instance's utilisation, as a remote exporter reports it
    gr_active: float | None = None
    #: % of cycles the instance's tensor pipes were busy (DCGM's PIPE_TENSOR_ACTIVE)
    tensor_activity: float | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class NvLinkSample:
    """One NVLink of a GPU at one tick: up or down, traffic, error counters."""

    link: int
    active: bool | None = None
    rx_bps: float | None = None
    tx_bps: float | None = None
    #: cumulative data-link error counters since the driver loaded
    crc_errors: int | None = None
    replay_errors: int | None = None
    recovery_errors: int | None = None


@record(hashable=True)
class GpuSample:
    """One GPU's readings at one tick.

    Immutable by contract, checked by mypy (``Final`` fields) rather than at run time: a
    frozen dataclass sets each field through ``object.__setattr__`` (four times the cost to
    build), and a tick builds one of these per GPU and one ProcessSample per GPU process."""

    index: Final[int]
    lost: Final[bool] = False
    util_gpu: Final[float | None] = None
    util_mem: Final[float | None] = None
    sm_activity: Final[float | None] = None
    tensor_activity: Final[float | None] = None
    sm_clock_mhz: Final[int | None] = None
    mem_clock_mhz: Final[int | None] = None
    graphics_clock_mhz: Final[int | None] = None
    app_sm_clock_mhz: Final[int | None] = None
    temp_c: Final[float | None] = None
    mem_temp_c: Final[float | None] = None
    temp_margin_c: Final[float | None] = None
    #: the speed the driver asks of the fan, % of its rated maximum (nvmlDeviceGetFanSpeed)
    fan_pct: Final[float | None] = None
    #: the first fan's speed in revolutions a minute, where the driver reports it
    #: (nvmlDeviceGetFanSpeedRPM, R535+): 0 while the fan is asked to turn is a fan that
    #: does not spin
    fan_rpm: Final[float | None] = None
    power_w: Final[float | None] = None
    power_limit_w: Final[float | None] = None
    pstate: Final[int | None] = None
    clock_reasons: Final[int | None] = None
    mem_used: Final[int | None] = None
    mem_free: Final[int | None] = None
    mem_total: Final[int | None] = None
    #: memory the driver reserves (DCGM's FB_RESERVED), counted in mem_total, not in used
    mem_reserved: Final[int | None] = None
    pcie_gen: Final[int | None] = None
    pcie_width: Final[int | None] = None
    pcie_rx_bps: Final[float | None] = None
    pcie_tx_bps: Final[float | None] = None
    pcie_replay_count: Final[int | None] = None
    ecc_volatile_corrected: Final[int | None] = None
    ecc_volatile_uncorrected: Final[int | None] = None
    #: uncorrectable ECC errors over the board's life (the driver's aggregate counter)
    ecc_aggregate_uncorrected: Final[int | None] = None
    remapped_rows_pending: Final[bool | None] = None
    #: row remapping (Ampere+): rows remapped for correctable and uncorrectable errors so
    #: far, and whether a remap failed (no spare row left: the memory is degraded)
    remapped_rows_corrected: Final[int | None] = None
    remapped_rows_uncorrected: Final[int | None] = None
    remapped_rows_failure: Final[bool | None] = None
    #: page retirement (before Ampere): pages retired for single- and double-bit errors,
    #: and whether a retirement waits for the next reset
    retired_pages_sbe: Final[int | None] = None
    retired_pages_dbe: Final[int | None] = None
    retired_pages_pending: Final[bool | None] = None
    energy_j: Final[float | None] = None
    #: the driver's own utilisation samples since the previous tick (percent, oldest
    #: first; nvmlDeviceGetSamples): short stalls that the tick's average hides
    util_samples: Final[tuple[float, ...]] = ()
    #: cumulative seconds the clocks were held down, by cause (nvmlDeviceGetViolationStatus):
    #: the "how long has this GPU been throttled" counters; rates come from their growth
    violation_power_s: Final[float | None] = None
    violation_thermal_s: Final[float | None] = None
    violation_board_s: Final[float | None] = None
    violation_reliability_s: Final[float | None] = None
    #: Xid errors the driver reported since the previous tick
    xid_events: Final[tuple[XidEvent, ...]] = ()
    #: PCIe RX/TX source: True from the driver's byte counters (exact over the tick), False
    #: from a sampled 20 ms window (nvmlDeviceGetPcieThroughput), None with no rates
    pcie_counter_based: Final[bool | None] = None
    #: MIG instances (MIG mode only), in the driver's order
    mig_instances: Final[tuple[MigInstance, ...]] = ()
    #: NVLinks of this GPU (read every few seconds), in link order; () without NVLink
    nvlinks: Final[tuple[NvLinkSample, ...]] = ()
    #: CRC, replay and recovery errors of all its NVLinks together (cumulative)
    nvlink_errors: Final[int | None] = None
    #: NVSwitch fabric registration: "none" (not on a fabric), "not-started",
    #: "in-progress", "completed", "failed" (completed with an error)
    fabric_state: Final[str | None] = None
    #: readings of this record the board or driver does not offer (NVML's NotSupported), by
    #: field name: a rule that needs one does not apply here, rather than "not judged"
    unsupported: Final[tuple[str, ...]] = ()

    @property
    def reason_names(self) -> tuple[str, ...]:
        """Active clock-event reasons as stable identifiers (``sw_thermal``...)."""
        return decode_reasons(self.clock_reasons)

    @property
    def mem_used_pct(self) -> float | None:
        if self.mem_used is None or not self.mem_total:
            return None
        return 100.0 * self.mem_used / self.mem_total


@record(hashable=True)
class ProcessSample:
    """A process using a GPU: what NVML says, joined with what the host says. Immutable by
    contract, as GpuSample."""

    pid: Final[int]
    gpu_index: Final[int]
    gpu_memory: Final[int | None] = None
    kind: Final[str] = "compute"
    name: Final[str | None] = None
    user: Final[str | None] = None
    command: Final[str | None] = None
    cpu_percent: Final[float | None] = None
    rss: Final[int | None] = None
    threads: Final[int | None] = None
    children: Final[int | None] = None
    visible: Final[bool] = True
    #: CUDA runtime the process mapped (libcudart's version, "12" or "12.1"), where readable
    cuda_runtime: Final[str | None] = None
    #: the few environment variables that change CUDA behaviour, "NAME=value", where readable
    env: Final[tuple[str, ...]] = ()
    #: the parent process's pid (ranks of one job launched by one torchrun share it)
    ppid: Final[int | None] = None
    #: the parent's command line: the launcher a job's ranks are grouped under
    parent_command: Final[str | None] = None
    #: CPU % of its child processes together (data-loader workers), where readable
    workers_cpu_percent: Final[float | None] = None
    #: how many of its children use at least ``config.WORKER_ACTIVE_PCT`` of a core: the
    #: workers that do the loading (idle helpers, such as compile workers, left out)
    workers_active: Final[int | None] = None
    #: the CUDA-related libraries it mapped (libcudart, libcuda, framework libraries), paths
    cuda_libraries: Final[tuple[str, ...]] = ()
    #: where ``cuda_runtime`` was read ("libcudart.so.12.4.127", "torch/version.py")
    cuda_runtime_evidence: Final[str | None] = None
    #: the CPUs it may run on (Cpus_allowed_list) and the NUMA nodes they belong to
    cpus_allowed: Final[str | None] = None
    cpu_nodes: Final[tuple[int, ...]] = ()
    #: per data-loader worker (child), the NUMA node its CPUs belong to; -1 for several
    workers_nodes: Final[tuple[int, ...]] = ()
    #: bytes of its memory on each NUMA node (index = node), from /proc/PID/numa_maps
    numa_memory: Final[tuple[int, ...]] = ()
    #: when the process started, seconds since the epoch (psutil's create_time)
    started: Final[float | None] = None
    #: % of the GPU's SMs this process kept busy, the driver's newest per-process sample
    #: (nvmlDeviceGetProcessUtilization); None where the driver gives no figure
    sm_util: Final[float | None] = None

    def __post_init__(self) -> None:
        clean_text_fields(self)
        clean_readings(self, started=math.inf, sm_util=100.0)


@frozen
class HostSample:
    """Host-wide readings: the CPU side of the data pipeline."""

    cpu_percent: float | None = None
    per_cpu_percent: tuple[float, ...] = ()
    cpu_count: int | None = None
    load_1: float | None = None
    load_5: float | None = None
    load_15: float | None = None
    mem_total: int | None = None
    mem_available: int | None = None
    swap_total: int | None = None
    swap_used: int | None = None
    iowait_pct: float | None = None
    disk_read_bps: float | None = None
    #: threads ready to run right now, gputui's own reader left out (/proc/loadavg): more
    #: than there are CPUs means work waits for a core
    run_queue: int | None = None
    hostname: str | None = None
    #: seconds since the host booted
    uptime_s: float | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)
        clean_readings(self, uptime_s=math.inf)


def _unread(unreadable: tuple[str, ...], area: str) -> str | None:
    """Why ``area`` ("shm") could not be read, from "area: why" entries; None if it was."""
    for entry in unreadable:
        name, _, why = entry.partition(": ")
        if name == area:
            return why
    return None


@frozen
class JobSettings:
    """The settings that bound one job: its cgroup (CPU quota, memory limit, cpuset), the
    /dev/shm of its mount namespace, its open-files limit, its memory in swap. A job is the
    GPU processes of one cgroup (``pids``), or gputui's own (``own``: ``doctor`` checks the
    job it was started in). Limits of -1 mean none is set; None is unknown, and
    ``unreadable`` says for which ``ConfigArea`` why ("shm: permission denied ...")."""

    pids: tuple[int, ...] = ()
    own: bool = False
    cgroup: str | None = None  # as /proc/PID/cgroup names it
    cgroup_version: int | None = None
    cpu_quota_us: int | None = None  # per period; -1: no quota
    cpu_period_us: int | None = None
    #: CFS periods since the cgroup started, those throttled, and the time throttled
    cpu_periods: int | None = None
    cpu_throttled_periods: int | None = None
    cpu_throttled_s: float | None = None
    #: the same over the readings of the last ``window_s`` (None after one reading), and
    #: the CPU time the cgroup used in it
    window_s: float | None = None
    window_periods: int | None = None
    window_throttled: int | None = None
    window_cpu_s: float | None = None
    memory_limit: int | None = None
    memory_used: int | None = None  # page cache included
    memory_anon: int | None = None  # what cannot be dropped: anonymous + shared memory
    memory_oom_kills: int | None = None  # processes killed at the limit since it started
    cpuset: str | None = None  # the CPUs it may use, Linux list format
    shm_size: int | None = None
    shm_used: int | None = None
    shm_mount: str | None = None  # "tmpfs size=65536k"; "" not a mount of its own
    workers: int | None = None  # data-loader workers (children) of its processes
    threads: int | None = None  # threads of its processes and workers together
    nofile_limit: int | None = None  # the soft open-files limit of its most pressed process
    open_files: int | None = None  # ... and the files that process has open
    swapped: int | None = None  # its processes' and workers' memory in swap
    #: the variables gputui reads (own job only: a GPU process carries its own)
    env: tuple[str, ...] = ()
    cpus_allowed: str | None = None  # own job only, as ProcessSample.cpus_allowed
    unreadable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        clean_text_fields(self)

    def unread(self, area: str) -> str | None:
        return _unread(self.unreadable, area)


@frozen
class DeviceWaiter:
    """A process that holds a GPU's device file and loaded the CUDA driver, with no
    context on any GPU: it waits for (or failed to get) an exclusive GPU."""

    pid: int
    minor: int
    name: str | None = None

    def __post_init__(self) -> None:
        clean_text_fields(self)


@frozen
class HostSettings:
    """Host settings that slow a job, read every few seconds; None unknown, and
    ``unreadable`` says for which ``ConfigArea`` why."""

    governor: str | None = None  # the CPU frequency governor most CPUs use
    governor_cpus: int | None = None  # ... how many use it
    cpufreq_cpus: int | None = None  # of the CPUs with a frequency driver
    cpufreq_driver: str | None = None  # "intel_pstate", "acpi-cpufreq"
    energy_preference: str | None = None  # energy_performance_preference (HWP, EPP)
    cpu_mhz: float | None = None  # the CPUs' mean current frequency
    cpu_max_mhz: float | None = None  # their highest
    thp_enabled: str | None = None  # transparent huge pages: always, madvise, never
    thp_defrag: str | None = None
    numa_balancing: bool | None = None
    numa_nodes: int | None = None
    numa_pages_migrated: int | None = None  # since boot (/proc/vmstat)
    ib_ports: tuple[str, ...] | None = None  # active InfiniBand ports ("mlx5_0/1")
    waiters: tuple[DeviceWaiter, ...] = ()
    unreadable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        clean_text_fields(self)

    def unread(self, area: str) -> str | None:
        return _unread(self.unreadable, area)


@frozen
class Note:
    """Something a source wants the user to know about this tick, in words."""

    kind: NoteKind
    text: str

    def __post_init__(self) -> None:
        clean_text_fields(self)

    def __str__(self) -> str:
        return self.text


@frozen
class NodeStatus:
    """One node of a cluster as a Prometheus server's aggregating queries see it, each
    tick: what shows and ranks it while its GPUs are not read in full (``Frame.nodes``).
    Counts are of its GPUs; None is unknown (the exporter lacks the field)."""

    node: str
    up: bool = True
    #: why it counts as down: "not scraped for 45 s", "up == 0 since the start"
    down: str | None = None
    gpus: int | None = None  # GPUs reporting now
    age_s: float | None = None  # its newest reading's age, by the server's clock
    interval_s: float | None = None  # the time between its readings (its scrapes)
    hottest_c: float | None = None
    util_mean: float | None = None
    util_min: float | None = None
    util_max: float | None = None
    power_w: float | None = None  # all its GPUs together
    thermal_gpus: int | None = None  # with a thermal clock-event reason set now
    power_cap_gpus: int | None = None  # ... the power cap
    slowdown_gpus: int | None = None  # ... HW slowdown or an external power brake
    xid: int | None = None  # the highest last-Xid code among its GPUs (0: none)
    replays: float | None = None  # PCIe replays over the history window, its GPUs together
    #: the engine's alerts firing on it (`gputui rules` loaded in the server), by severity
    engine_critical: int | None = None
    engine_warning: int | None = None
    #: the Kubernetes workloads on its GPUs (pod names), in GPU order
    pods: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        clean_text_fields(self)
        clean_readings(
            self,
            age_s=math.inf,
            interval_s=math.inf,
            hottest_c=1000.0,
            util_mean=100.0,
            util_min=100.0,
            util_max=100.0,
            power_w=math.inf,
            replays=math.inf,
        )


@frozen
class Frame:
    """Everything one tick read: all GPUs, the host, and the processes on the GPUs.

    ``time`` comes from the source's clock (seconds since the epoch), so everything
    downstream, the advisor included, is testable on a fixed clock.
    """

    time: float
    gpus: tuple[GpuSample, ...]
    host: HostSample | None = None
    processes: tuple[ProcessSample, ...] = ()
    notes: tuple[Note, ...] = field(default=())
    #: the settings of each job on the GPUs, and of the host; () and None where the
    #: source does not read them (simulated, remote, older recordings)
    jobs: tuple[JobSettings, ...] = ()
    settings: HostSettings | None = None
    #: a cluster's nodes as aggregating queries see them (a Prometheus server): the nodes
    #: whose GPUs this frame does not carry in full are shown and ranked by these
    nodes: tuple[NodeStatus, ...] = ()
    #: GPUs that joined since the source opened (a node that came up later): their facts;
    #: a known GPU's index here brings its newer facts (a node's limits, first read in full)
    joined: tuple[DeviceInfo, ...] = ()
    #: the history window of GPUs this frame is the first to carry in full (a node the
    #: screen began to show), oldest first: placed into the history at their times
    late: tuple[Frame, ...] = ()
    #: GPUs whose process list the driver refused this tick (no permission): no process
    #: on them is "none known", and the rules that read processes cannot judge them
    processes_unread: tuple[int, ...] = ()

    def gpu(self, index: int) -> GpuSample | None:
        for sample in self.gpus:
            if sample.index == index:
                return sample
        return None

    def processes_on(self, index: int) -> tuple[ProcessSample, ...]:
        return tuple(p for p in self.processes if p.gpu_index == index)


@frozen
class Finding:
    """What the advisor says about a GPU (or the host, ``gpu`` None): a condition that held
    long enough, since when, the numbers that prove it and what to do."""

    rule: RuleId
    severity: Severity
    gpu: int | None
    title: str
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]
    since: float  # when the condition started to hold (frame time)
    updated: float  # the last frame time the condition held

    def __post_init__(self) -> None:
        clean_text_fields(self)

    @property
    def key(self) -> tuple[RuleId, int | None]:
        return (self.rule, self.gpu)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.value,
            "severity": self.severity.value,
            "gpu": self.gpu,
            "title": self.title,
            "evidence": list(self.evidence),
            "remedies": list(self.remedies),
            "since": self.since,
            "updated": self.updated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            rule=RuleId(data["rule"]),
            severity=Severity(data["severity"]),
            gpu=data["gpu"],
            title=data["title"],
            evidence=tuple(data["evidence"]),
            remedies=tuple(data["remedies"]),
            since=float(data["since"]),
            updated=float(data["updated"]),
        )


def finding_order(finding: Finding) -> tuple[int, int, str]:
    """Most severe first, then by GPU (host last), then by rule."""
    gpu = finding.gpu if finding.gpu is not None else 1 << 20
    return (-finding.severity.rank, gpu, finding.rule.value)
