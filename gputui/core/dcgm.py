"""DCGM's field names as Prometheus metrics, once for the whole project.

dcgm-exporter names each metric after its DCGM field (``DCGM_FI_DEV_GPU_TEMP``) in DCGM's
own units (MiB, mJ, ratios 0-1). ``gputui export`` writes these names and ``--source`` reads
them back, both from this table; the ``gputui_*`` fields are the limits dcgm-exporter does
not export, which gputui adds so that a remote gputui can judge as a local one does.
"""

from __future__ import annotations

from typing import Final, Literal

from gputui.core.records import frozen

MIB: Final = 1024**2

# DCGM's "blank" values (dcgm_structs.h, DCGM_BLANK_VALUES): each value type has its own
# base, and BLANK, NOT_FOUND, NOT_SUPPORTED, NOT_PERMISSIONED follow it (base + 0..3);
# DCGM_INT32_IS_BLANK / DCGM_INT64_IS_BLANK / DCGM_FP64_IS_BLANK test "value >= base".
INT32_BLANK: Final = 0x7FFFFFF0
INT32_MAX: Final = 0x7FFFFFFF
INT64_BLANK: Final = 0x7FFFFFFFFFFFFFF0
FP64_BLANK: Final = 140737488355328.0  # 2 ** 47

#: "int32": a 32-bit quantity (DCGM keeps it in an int64 field: either family's blanks);
#: "int64": a 64-bit one (counters, bytes, mJ); "double": a floating-point field
BlankKind = Literal["int32", "int64", "double"]


def is_blank(value: float, kind: BlankKind) -> bool:
    """Whether an exposition value is one of DCGM's blanks for a field of that type.

    Exact per type: an int64 field (energy in mJ, PCIe bytes, counters) keeps every value
    below the int64 blanks, 2**31 and above included. An int32-sized quantity (clocks,
    temperatures, fan, utilisation, limits) is one DCGM stores in an int64 field: it is
    blank from 0x7FFFFFF0 to 0x7FFFFFFF (the value was read as 32 bits) and from the int64
    blanks up (DCGM_FI_DEV_SLOWDOWN_TEMP answers 9223372036854775808 on boards without it).
    """
    if kind == "double":
        return value >= FP64_BLANK
    if value >= float(INT64_BLANK):  # 2**63 - 16 parses to 2**63 as a double
        return True
    return kind == "int32" and INT32_BLANK <= value <= INT32_MAX


@frozen
class DcgmField:
    name: str
    #: the model field it carries: a GpuSample field ("sample") or a DeviceInfo one ("device")
    attr: str
    on: Literal["sample", "device"]
    help: str
    #: model value = exposition value * scale (MiB -> bytes, mJ -> J, ratio -> %)
    scale: float = 1.0
    integer: bool = False
    #: older names of the same field, read but never written
    aliases: tuple[str, ...] = ()
    #: DCGM's value type, for its blank sentinels
    blank: BlankKind = "int32"
    #: dcgm-exporter declares it a counter (its samples parse as NAME_total)
    counter: bool = False
    #: a yes/no state (a remap pending, a remap failed): any value but 0 is yes
    flag: bool = False

    @property
    def dcgm_name(self) -> str:
        """The DCGM field's own name, as a line of dcgm-exporter's counters CSV names it."""
        if self.name.startswith("DCGM_FI_"):
            return self.name
        return next(a for a in self.aliases if a.startswith("DCGM_FI_"))

    @property
    def csv_line(self) -> str:
        """The line that enables it in dcgm-exporter's counters CSV (field, type, help)."""
        kind = "counter" if self.counter else "gauge"
        return f"{self.dcgm_name}, {kind}, {self.help}"

    def to_model(self, value: float) -> float | int | bool:
        if self.flag:
            return value != 0
        scaled = value * self.scale
        return int(scaled) if self.integer else scaled

    def to_exposition(self, value: float | int) -> float:
        return float(value) / self.scale


FIELDS: Final[tuple[DcgmField, ...]] = (
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "util_gpu", "sample", "GPU utilization (in %)."),
    DcgmField(
        "DCGM_FI_DEV_PSTATE",
        "pstate",
        "sample",
        "Performance state (P-State) 0-15. 0=highest.",
        integer=True,
    ),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "util_mem", "sample", "Memory utilization (in %)."),
    DcgmField(
        "DCGM_FI_DEV_SM_CLOCK",
        "sm_clock_mhz",
        "sample",
        "SM clock frequency (in MHz).",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_MEM_CLOCK",
        "mem_clock_mhz",
        "sample",
        "Memory clock frequency (in MHz).",
        integer=True,
    ),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "temp_c", "sample", "GPU temperature (in C)."),
    DcgmField("DCGM_FI_DEV_MEMORY_TEMP", "mem_temp_c", "sample", "Memory temperature (in C)."),
    DcgmField("DCGM_FI_DEV_FAN_SPEED", "fan_pct", "sample", "Fan speed (in %)."),
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "power_w", "sample", "Power draw (in W).", blank="double"),
    DcgmField(
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "power_limit_w",
        "sample",
        "Enforced power limit (in W).",
        blank="double",
    ),
    DcgmField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "energy_j",
        "sample",
        "Total energy consumption since boot (in mJ).",
        scale=1e-3,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_FB_USED",
        "mem_used",
        "sample",
        "Framebuffer memory used (in MiB).",
        scale=MIB,
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_FB_FREE",
        "mem_free",
        "sample",
        "Framebuffer memory free (in MiB).",
        scale=MIB,
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_FB_RESERVED",
        "mem_reserved",
        "sample",
        "Framebuffer memory reserved (in MiB).",
        scale=MIB,
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "clock_reasons",
        "sample",
        "Current clock event reasons (bitmask).",
        integer=True,
        blank="int64",
        aliases=("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",),  # its name before DCGM 3.3
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "pcie_replay_count",
        "sample",
        "Total number of PCIe retries.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_LINK_GEN",
        "pcie_gen",
        "sample",
        "PCIe current link generation.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "pcie_width",
        "sample",
        "PCIe current link width.",
        integer=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "ecc_volatile_corrected",
        "sample",
        "Total number of single-bit volatile ECC errors.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "ecc_volatile_uncorrected",
        "sample",
        "Total number of double-bit volatile ECC errors.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_PROF_SM_ACTIVE",
        "sm_activity",
        "sample",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        scale=100.0,
        blank="double",
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "tensor_activity",
        "sample",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        scale=100.0,
        blank="double",
    ),
    DcgmField(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "pcie_tx_bps",
        "sample",
        "The rate of data transmitted over the PCIe bus, in bytes per second.",
        blank="int64",
    ),
    DcgmField(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "pcie_rx_bps",
        "sample",
        "The rate of data received over the PCIe bus, in bytes per second.",
        blank="int64",
    ),
    # The memory's health as the driver keeps it (dcgm-exporter's default counters carry
    # the row remapper's; page retirement is the pre-Ampere boards' way)
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "ecc_aggregate_uncorrected",
        "sample",
        "Total number of double-bit persistent ECC errors.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "remapped_rows_uncorrected",
        "sample",
        "Number of remapped rows for uncorrectable errors",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "remapped_rows_corrected",
        "sample",
        "Number of remapped rows for correctable errors",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "remapped_rows_failure",
        "sample",
        "Whether remapping of rows has failed",
        blank="int64",
        flag=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "remapped_rows_pending",
        "sample",
        "Whether a row remap is pending (it takes effect at the next GPU reset)",
        blank="int64",
        flag=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_SBE",
        "retired_pages_sbe",
        "sample",
        "Total number of retired pages due to single-bit errors.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_DBE",
        "retired_pages_dbe",
        "sample",
        "Total number of retired pages due to double-bit errors.",
        integer=True,
        blank="int64",
        counter=True,
    ),
    DcgmField(
        "DCGM_FI_DEV_RETIRED_PENDING",
        "retired_pages_pending",
        "sample",
        "Whether a page retirement is pending (it takes effect at the next GPU reset)",
        blank="int64",
        flag=True,
    ),
    # The limits the advisor compares against: DCGM has fields for them, which
    # dcgm-exporter's default counters leave out; gputui exports its own names.
    DcgmField(
        "gputui_temp_slowdown_celsius",
        "temp_slowdown_c",
        "device",
        "Temperature at which the GPU slows down.",
        aliases=("DCGM_FI_DEV_SLOWDOWN_TEMP",),
    ),
    DcgmField(
        "gputui_temp_shutdown_celsius",
        "temp_shutdown_c",
        "device",
        "Temperature at which the GPU shuts down.",
        aliases=("DCGM_FI_DEV_SHUTDOWN_TEMP",),
    ),
    DcgmField(
        "gputui_power_default_limit_watts",
        "power_default_limit_w",
        "device",
        "The card's default power limit.",
        blank="double",
        aliases=("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF",),
    ),
    DcgmField(
        "gputui_sm_clock_max_mhz",
        "max_sm_clock_mhz",
        "device",
        "Maximum SM clock.",
        integer=True,
        aliases=("DCGM_FI_DEV_MAX_SM_CLOCK",),
    ),
    DcgmField(
        "gputui_mem_clock_max_mhz",
        "max_mem_clock_mhz",
        "device",
        "Maximum memory clock.",
        integer=True,
        aliases=("DCGM_FI_DEV_MAX_MEM_CLOCK",),
    ),
    DcgmField(
        "gputui_pcie_max_gen",
        "pcie_max_gen",
        "device",
        "Maximum PCIe generation of GPU and slot.",
        integer=True,
        aliases=("DCGM_FI_DEV_PCIE_MAX_LINK_GEN",),
    ),
    DcgmField(
        "gputui_pcie_max_width",
        "pcie_max_width",
        "device",
        "Maximum PCIe link width.",
        integer=True,
        aliases=("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",),
    ),
)

#: fields gputui reads from dcgm-exporter but never writes (no single model field holds them)
READ_ONLY: Final[tuple[DcgmField, ...]] = (
    # the last Xid's code as the value; newer exporters add err_code/err_msg labels
    DcgmField(
        "DCGM_FI_DEV_XID_ERRORS",
        "xid",
        "sample",
        "Value of the last XID error encountered.",
        integer=True,
        blank="int64",
    ),
    # what MIG instances report instead of GPU_UTIL (a ratio, 0-1)
    DcgmField(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gr_active",
        "sample",
        "Ratio of time the graphics engine is active.",
        scale=100.0,
        blank="double",
    ),
)


def exposed_names(f: DcgmField) -> tuple[str, ...]:
    """Every name a server may hold the field under: its own, its older ones, and for a
    counter each of them as NAME_total (prometheus-client's parser, and its exposition,
    name a counter's samples so)."""
    own = (f.name, *f.aliases)
    return own + tuple(f"{n}_total" for n in own) if f.counter else own


#: every name a reader accepts (current names, aliases, counters' _total) -> its field
BY_NAME: Final[dict[str, DcgmField]] = {
    name: f for f in (*FIELDS, *READ_ONLY) for name in exposed_names(f)
}
BY_ATTR: Final[dict[str, DcgmField]] = {f.attr: f for f in (*FIELDS, *READ_ONLY)}
#: the model readings pages of these metrics can carry (a remote node, a Prometheus
#: server): the table's, and the memory total they add up to. A rule that needs any other
#: (processes, the host, the board's modes and topology) can never run on such a source.
CARRIED: Final[frozenset[str]] = frozenset(BY_ATTR) | {"mem_total"}

#: dcgm-exporter 1.x (2019-2020) named its metrics in a lowercase dcgm_* namespace
#: (dcgm_gpu_temp, dcgm_fb_used...); 2.0 moved to the DCGM field names read here.
LEGACY_PREFIX: Final = "dcgm_"
LEGACY_MESSAGE: Final = (
    "this is dcgm-exporter 1.x (lowercase dcgm_* metric names): gputui reads "
    "dcgm-exporter 2.0 or later (DCGM_FI_* names); upgrade the exporter"
)

#: the readings each rule needs, by model attribute: without them, the rule is blind
#: (keys are names.RuleId values: this core module imports nothing above it)
RULE_NEEDS: Final[dict[str, tuple[str, ...]]] = {
    "thermal-throttle": ("clock_reasons", "max_sm_clock_mhz"),
    "thermal-hot": ("temp_slowdown_c",),
    "hw-slowdown": ("clock_reasons",),
    "power-cap": ("clock_reasons", "power_limit_w"),
    "power-limit-lowered": ("power_limit_w", "power_default_limit_w"),
    "clocks-limited": ("max_sm_clock_mhz",),
    "clocks-held": ("clock_reasons", "max_sm_clock_mhz"),
    "pcie-link-degraded": ("pcie_gen", "pcie_width", "pcie_max_gen", "pcie_max_width"),
    "pcie-saturated": ("pcie_rx_bps", "pcie_tx_bps", "pcie_gen", "pcie_width"),
    "pcie-errors": ("pcie_replay_count",),
    "gpu-errors": ("xid", "ecc_volatile_uncorrected"),
}


def missing_counters(present: set[str]) -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """Given the model attributes a node's page carried: the rules that are blind (and
    what they lack), and the counters-CSV lines that would enable them, once each."""
    blind: dict[str, tuple[str, ...]] = {}
    lines: dict[str, None] = {}
    for rule, needs in RULE_NEEDS.items():
        lacking = tuple(a for a in needs if a not in present)
        if lacking:
            blind[rule] = lacking
            for attr in lacking:
                lines[BY_ATTR[attr].csv_line] = None
    return blind, tuple(lines)
