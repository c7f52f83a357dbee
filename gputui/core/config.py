"""Frozen settings: sampling, history and (later) advisor thresholds, with their defaults."""

from __future__ import annotations

from gputui.core.records import frozen

DEFAULT_INTERVAL_S = 1.0
MIN_INTERVAL_S = 0.25
MAX_INTERVAL_S = 60.0
# Each process's SM % (nvmlDeviceGetProcessUtilization) is read this often while the GPU
# has processes: one call per period keeps a tick within its budget of NVML calls (every
# tick would add one call per GPU). The screen's legend says so.
PROCESS_UTIL_PERIOD_S = 10.0
DEFAULT_HISTORY_S = 3600.0
# A replay plays from an eighth of real time to 64 times it.
MIN_SPEED, MAX_SPEED = 0.125, 64.0
# A child process using at least this much of a core does work (a data-loader worker that
# makes batches); idle helpers below it (compile workers, a logger) are not counted.
WORKER_ACTIVE_PCT = 10.0
# The demo's scenarios by name, for the command line: naming them here spares a live start
# the simulation's import (tests/unit/test_simulated.py holds them to its table).
DEMO_SCENARIOS = (
    "healthy", "thermal", "powercap", "vram", "pcie", "starved", "loader-bound", "idle",
    "pytorch-plateau", "sweep", "gen5-in-gen4", "warm-4090", "hw-blip", "minor-compat",
    "at-power-limit", "numa", "nvlink-down", "hang", "fan-stopped", "crowded", "decode",
    "zero-rpm",
)  # fmt: skip
DEMO_MIX = "mix"  # the default: several scenarios at once
# The screen's themes by name, for the command line (Textual's own: textual-dark, -light);
# the panels' colours follow the theme.
THEMES = ("dark", "light")
DEMO_MAX_GPUS = 64
# A recording's block closes at this many ticks, or as many seconds of frame time (`gputui
# record --block`); a reader refuses a block of more than the most (docs/record.md).
RECORD_BLOCK_TICKS = 60
MAX_BLOCK_TICKS = 3600
# What a power cut may take of a recording, at most, in seconds of its ticks (`--sync`).
RECORD_SYNC_S = 5.0
MAX_RECORD_SYNC_S = 3600.0


@frozen
class Config:
    interval_s: float = DEFAULT_INTERVAL_S
    history_s: float = DEFAULT_HISTORY_S

    @property
    def history_points(self) -> int:
        """Ring-buffer length: the history window at the configured interval."""
        return max(2, int(self.history_s / self.interval_s) + 1)


@frozen
class Thresholds:
    """The advisor's numbers. Documented with the rule catalogue in docs/advisor.md."""

    start_after_s: float = 5.0  # a condition must hold this long before a finding starts
    end_after_s: float = 15.0  # ... and be gone this long before it ends
    # The rules judge windows of tens of seconds: judging every tick adds cost, not
    # knowledge (a 30 s window moves by an eighth between two judgements; a lost GPU or a
    # new Xid is judged at once). Frame time, so recordings replay the same at any speed.
    judge_every_s: float = 4.0
    window_s: float = 30.0  # "sustained" means over this window
    min_points: int = 5  # fewer readings than this in a window: too early to judge
    # The history most rules need before "nothing found" means anything; until a GPU has it
    # every surface says "gathering: 4 s of 10 s" instead of "no findings".
    judge_min_s: float = 10.0
    busy_util_pct: float = 30.0  # "under load": mean utilisation at least this
    # Without a utilisation reading (MIG mode) "under load" is read from the power draw:
    busy_power_share: float = 0.4  # mean power at least this share of the enforced limit
    thermal_fraction: float = 0.3  # share of the window with a thermal reason set
    # "Hot" is judged against the board's own limits (max operating, slowdown, HBM max,
    # the driver's margin); consumer cards run in the 80s by design. This fixed figure is
    # used only when the board reports no limit at all.
    hot_temp_c: float = 85.0
    hot_mean_s: float = 10.0  # temperature judged on this short mean
    hot_margin_c: float = 3.0  # within this of the board's lowest limit is "hot"
    lone_hot_gap_c: float = 10.0  # hotter than its peers' median by this: look at it first
    power_cap_fraction: float = 0.5
    power_at_limit: float = 0.95  # power / enforced limit
    # At its default limit a board under heavy load holds most of its clock (an H200 in
    # bf16 GEMMs at 700 W: 76 % of max); far below this share the cap is worth a look.
    power_cap_clock_floor: float = 0.55
    app_clock_lowered: float = 0.98  # application clock below this share of its default
    # Busy (utilisation at least held_busy_pct) with the SM clock under held_clock_share of
    # its maximum while the driver names no cause (no power cap, thermal, HW slowdown, sync
    # boost...) in more than held_named_share of the readings: locked clocks or a limit
    # from outside the GPU (the chassis, a power policy) hold it.
    held_busy_pct: float = 70.0
    held_clock_share: float = 0.75
    held_named_share: float = 0.1
    # HW slowdown: critical only when sustained under load, as a share of the busy ticks,
    # for at least hw_slowdown_min_s; a blip (a load change) is an info line at most.
    hw_slowdown_fraction: float = 0.1
    hw_slowdown_min_s: float = 5.0
    hw_slowdown_min_readings: int = 2  # ... and over this many of the source's readings
    limit_lowered_w: float = 1.0  # enforced below default by more than this
    held_window_s: float = 60.0  # time throttled (the driver's violation counters) over this
    xid_window_s: float = 600.0  # an Xid is news for this long
    retired_pages_limit: int = 64  # DCGM health fails a GPU with this many retired pages
    ecc_storm_per_min: float = 1000.0  # corrected ECC errors a minute: the memory wears
    # VRAM: frameworks reserve most of the card (PyTorch's cache, TF/JAX preallocation,
    # vLLM's 90 %): high and flat is normal. Pressure is growth toward the total, or the
    # ceiling reached while the GPU's work falls.
    vram_warning_pct: float = 90.0  # "high": a flat plateau above this is an info line
    vram_critical_pct: float = 97.0  # "at the ceiling"
    vram_mean_s: float = 5.0  # VRAM judged on this short mean
    vram_growth_s: float = 60.0  # ... and its growth over this long
    vram_growth_bps: float = 1.0e6  # "growing": at least this, over the window and lately
    vram_full_warning_s: float = 1800.0  # growing and full within this: warning
    vram_full_critical_s: float = 300.0  # ... within this: critical
    vram_util_drop_pct: float = 25.0  # at the ceiling, utilisation fell by this many points
    vram_moved_pct: float = 0.5  # ... and the memory moved by this much of the total
    vram_moved_s: float = 300.0  # ... within this long (flat for longer: a reserve)
    host_available_pct: float = 5.0
    swap_growth_bps: float = 1.0e6  # swap use growing faster than 1 MB/s
    pcie_saturated: float = 0.8  # share of the capacity of the link the window's traffic used
    # DCGM's own limit (DCGM_LIMIT_MAX_PCIREPLAY_RATE, "the maximum recommended by RM"):
    # an occasional replay happens on healthy links
    pcie_replays_per_min: float = 8.0
    pcie_replays_critical_per_min: float = 100.0
    pcie_replay_window_s: float = 60.0
    # Input starvation as the driver shows it: a starved job rarely reads 0 % for a whole
    # tick (the driver averages the stalls), it reads 30-60 % tick after tick.
    starved_fed_pct: float = 80.0  # mean utilisation below this: the GPU waits >= 20 %
    starved_running_pct: float = 5.0  # ... and at least this: it does run
    full_util_pct: float = 90.0  # a tick below this is short of full
    starved_short_share: float = 0.6  # most ticks short of full: a steady shortfall
    starved_idle_util_pct: float = 10.0  # a tick at or below this is "waiting"
    starved_idle_fraction: float = 0.25  # ... or this share of the window waits
    starved_busy_util_pct: float = 50.0  # ... rising above this at least twice (bursts)
    cpu_bound_pct: float = 90.0  # a main process at >= 90 % of a core is CPU-bound
    # The process table marks a process between cpu_bound_pct and this: one busy core,
    # the Python GIL's signature (a context, not a verdict: the advisor judges the GPU)
    cpu_bound_max_pct: float = 115.0
    worker_saturated_pct: float = 85.0  # loader workers at this share of a core each
    host_cpu_saturated_pct: float = 90.0
    # ... which starves a job only where the job's own processes load: its working loaders
    # at this much of a core each or more, or its main process without any at the second
    # (a server's main process between requests rests below it)
    starved_loader_pct: float = 20.0
    starved_main_pct: float = 50.0
    run_queue_per_cpu: float = 1.0  # more runnable threads than this per CPU: saturated
    iowait_pct: float = 20.0
    # ... or, on a host of many CPUs (iowait is a share of them all), as many CPUs waiting
    # for storage as this share of the GPU's data-loader workers (at least 2)
    iowait_workers_share: float = 0.5
    io_bound_util_pct: float = 60.0  # the GPU busy less than this while iowait is high
    straggler_clock_gap: float = 0.10  # SM clock (share of max) below the peers' median
    straggler_util_gap_pct: float = 20.0
    idle_allocated_s: float = 300.0
    # Busy without work (a hung collective's ranks, a kernel that spins): the driver says a
    # kernel runs every tick (utilisation at least spin_util_pct) while the board's own
    # readings say nothing is computed or moved: power at most spin_power_share of the
    # enforced limit, memory activity at most spin_mem_pct, SM activity (GPM) at most
    # spin_sm_pct, PCIe and NVLink traffic together below spin_link_bps; two of power,
    # memory and SM activity read, and none of the read ones says work.
    spin_util_pct: float = 90.0
    spin_power_share: float = 0.5  # a T4 or L4 waiting at P0 draws ~40 % of its small limit
    spin_mem_pct: float = 10.0
    spin_sm_pct: float = 30.0
    spin_link_bps: float = 0.5e9
    # A job's ranks spin while a rank of it idles or is gone this long: a probable hang (a
    # checkpoint save or an evaluation on one rank pauses the others too, briefly) ...
    hang_s: float = 120.0
    # ... or this long where the odd rank's process works on its CPU (a long save looks
    # so), or no rank here explains the wait (the one they wait for is on another node)
    hang_unseen_s: float = 300.0
    hang_cpu_pct: float = 50.0  # the odd rank's process at this much CPU works on the host
    spin_alone_s: float = 300.0  # one GPU (no job's rank here explains it) busy without work
    # Cooling: a fan the driver holds at or below fan_stopped_pct while the board is hot
    # (within fan_hot_margin_c of its lowest limit), or warm past what a zero-RPM fan stop
    # allows (fan_stop_max_c) and heating under load (fan_rising_c_min a minute); or a fan
    # asked to turn at fan_asked_pct or more whose tachometer reads 0 RPM; or held at
    # fan_low_pct or less on a hot board that keeps heating (its control does not follow).
    fan_stopped_pct: float = 5.0
    fan_low_pct: float = 30.0
    fan_hot_margin_c: float = 15.0
    fan_stop_max_c: float = 65.0
    fan_rising_c_min: float = 1.0
    fan_asked_pct: float = 30.0
    # Placement: a rank's context on another rank's GPU of at most this much memory (and
    # a quarter of what it holds on its own) is a stray one (a CUDA call before
    # set_device); several ranks of one job on one GPU hold this long before a finding
    # (a launch settles)
    stray_context_bytes: int = 2 << 30
    crowded_hold_s: float = 30.0
    shared_sm_pct: float = 5.0  # a process with this SM share works on the GPU
    idle_allocated_bytes: int = 1 << 30
    idle_util_pct: float = 2.0
    # "Under-used, cause not visible from here": a process on the GPU, busy less than this
    # share of the time for at least under_used_s, and no other rule explains it.
    under_used_busy_share: float = 0.5
    under_used_s: float = 120.0
    sample_busy_pct: float = 50.0  # a driver utilisation sample above this is "busy"
    # Topology. NUMA: a process pinned away from its GPU's node costs only while the GPU
    # waits (utilisation below this) or copies a lot (PCIe RX+TX at least this).
    numa_waiting_util_pct: float = 80.0
    numa_copy_bps: float = 5.0e9
    numa_far_memory_share: float = 0.5  # ... or this share of its memory on another node
    numa_workers_share: float = 0.5  # ... or more than this share of its workers elsewhere
    # PCIe switch: the GPUs behind it together reach this share of its uplink, while each
    # alone stays below pcie_shared_alone of its own link.
    pcie_shared_uplink: float = 0.8
    pcie_shared_alone: float = 0.6
    nvlink_window_s: float = 120.0  # NVLink counters are read every 10 s: a longer window
    # DCGM's NVLink watch: CRC errors (retransmitted, corrected) warn, and fail only at
    # 100 a second; any replay or recovery error (lost flits, a retrained link) fails
    nvlink_errors_critical_per_min: float = 6000.0
    fabric_settle_s: float = 60.0  # fabric registration "in progress" longer than this
    # Configuration. The job's cgroup: throttled in this share of its CFS periods (over the
    # window, or since the cgroup started for a one-off check with this many periods).
    cpu_throttled_share: float = 0.1
    cpu_throttled_min_periods: int = 50
    # its memory that cannot be dropped (anonymous + shared memory) at this share of the limit
    cgroup_memory_share: float = 0.9
    # /dev/shm below this with data-loader workers (a container's default is 64 MB), or
    # used at this share of its size
    shm_min_bytes: int = 1 << 30
    shm_used_share: float = 0.8
    # open files at this share of the soft limit; a limit at or below this with workers
    open_files_share: float = 0.8
    open_files_low: int = 1024
    job_swapped_bytes: int = 64 << 20  # the job's processes have this much in swap
    # OMP_NUM_THREADS unset: the job's threads above this many per CPU it may use, with at
    # least omp_min_workers data-loader workers
    omp_threads_per_cpu: float = 2.0
    omp_min_workers: int = 2
    # the graphics clock's P0 ceiling below this share of the board's maximum: locked
    clocks_locked_share: float = 0.95
