"""NVIDIA's Xid catalogue, as gputui acts on it: what each common Xid means, whose problem
it usually is, how serious it is, and what to do.

The classes follow NVIDIA's public Xid catalogue (docs.nvidia.com/deploy/xid-errors): an
application class (a bad kernel or memory access: look at the program, never "drain the
node"), the memory classes (ECC, row remapping: reset, or RMA when the board has no spare
rows left), the bus (fallen off it), NVLink, the GSP firmware, and driver firmware.
"""

from __future__ import annotations

from typing import Final, Literal

from gputui.core.records import frozen

#: whose problem an Xid usually is
Origin = Literal["application", "memory", "bus", "nvlink", "gsp", "firmware", "hardware", "benign"]
#: how serious: the advisor's severities by name (this module sits below them)
Level = Literal["info", "warning", "critical"]


@frozen
class Xid:
    meaning: str
    origin: Origin
    level: Level
    remedies: tuple[str, ...]


_APP = (
    "Look at the program first: its log at that time (an illegal memory access, an "
    "out-of-bounds index, a kernel bug); rerun with CUDA_LAUNCH_BLOCKING=1 or "
    "compute-sanitizer to find the kernel",
    "Only when it recurs across programs and users: suspect the GPU (check the other Xids)",
)
_RESET_IDLE = (
    "Reset the GPU when it is idle (nvidia-smi -r -i {gpu}, root) or reboot: the repair takes "
    "effect then",
    "Drain the node first so no job is on it during the reset",
)
_RMA = (
    "Drain the node: this GPU has run out of spare memory rows or retired pages",
    "Run the vendor's field diagnostics (dcgmi diag -r 3) and open an RMA with the board's "
    "serial number (nvidia-smi -q | grep Serial)",
)
_MEMORY_RESET = (
    "Reset the GPU (nvidia-smi -r -i {gpu}, root) or reboot: its memory is in an unknown state",
    "Check the memory health counters (nvidia-smi -q -d ECC,ROW_REMAPPER); drain and RMA if "
    "it recurs",
)
_BUS = (
    "Reboot the node: the GPU no longer answers on PCIe; a reset rarely brings it back",
    "If it recurs: reseat the card and its power cables, check the slot, riser and PSU, "
    "and the BMC/SEL log for power or thermal events",
)
_NVLINK = (
    "Check the links: nvidia-smi nvlink -s -i {gpu} and nvidia-smi nvlink -e -i {gpu}",
    "Reset the GPU when idle or reboot; on NVSwitch systems check Fabric Manager "
    "(systemctl status nvidia-fabricmanager); a link that keeps failing is a hardware case",
)
_GSP = (
    "Reset the GPU (nvidia-smi -r -i {gpu}, root) or reboot: its GSP firmware stopped answering",
    "Update to the newest driver of your branch; if it recurs on one GPU, drain it and have "
    "it checked",
)
_FIRMWARE = (
    "Reset the GPU or reboot; update the driver (and the board's VBIOS) if it recurs",
    "Collect nvidia-bug-report.sh output for NVIDIA or your vendor",
)
_HARDWARE = (
    "Drain the node: stop scheduling jobs on it",
    "Check `dmesg` / `journalctl -k` for this Xid; reset the GPU when idle or reboot; run "
    "dcgmi diag -r 3 and RMA if it recurs",
)

#: code -> what gputui knows of it
XIDS: Final[dict[int, Xid]] = {
    8: Xid(
        "GPU stopped processing (a kernel ran too long or hung)", "application", "warning", _APP
    ),
    13: Xid("graphics engine exception (often the application)", "application", "warning", _APP),
    31: Xid("GPU memory page fault (often the application)", "application", "warning", _APP),
    32: Xid(
        "invalid or corrupted push buffer stream (PCIe or system memory)", "bus", "critical", _BUS
    ),
    38: Xid("driver firmware error", "firmware", "warning", _FIRMWARE),
    43: Xid("GPU stopped processing (an application reset)", "application", "warning", _APP),
    45: Xid(
        "preemptive cleanup (a process ended after an earlier error)",
        "benign",
        "info",
        ("Nothing on its own: it follows another Xid or a killed process; see that one",),
    ),
    48: Xid("double-bit ECC error", "memory", "critical", _MEMORY_RESET),
    61: Xid("internal micro-controller breakpoint", "firmware", "warning", _FIRMWARE),
    62: Xid("internal micro-controller halt", "firmware", "critical", _FIRMWARE),
    63: Xid(
        "ECC page retirement or row remap recorded (pending until a reset)",
        "memory",
        "warning",
        _RESET_IDLE,
    ),
    64: Xid("ECC page retirement or row remap failed", "memory", "critical", _RMA),
    68: Xid("video decoder (NVDEC) exception", "application", "warning", _APP),
    69: Xid("graphics engine class error", "application", "warning", _APP),
    74: Xid("NVLink error", "nvlink", "critical", _NVLINK),
    79: Xid("GPU fell off the bus", "bus", "critical", _BUS),
    92: Xid("high single-bit ECC error rate", "memory", "warning", _MEMORY_RESET),
    94: Xid("contained ECC error (one application was stopped)", "memory", "warning", _RESET_IDLE),
    95: Xid(
        "uncontained ECC error (every application on the GPU affected)",
        "memory",
        "critical",
        _MEMORY_RESET,
    ),
    109: Xid("context switch timeout", "application", "warning", _APP),
    119: Xid("GSP RPC timeout", "gsp", "critical", _GSP),
    120: Xid("GSP error", "gsp", "critical", _GSP),
    121: Xid("C2C (chip-to-chip) link error", "hardware", "critical", _HARDWARE),
    140: Xid("unrecovered ECC error", "memory", "critical", _MEMORY_RESET),
    143: Xid("GPU initialization failure", "hardware", "critical", _HARDWARE),
    144: Xid("NVLink error (SAW)", "nvlink", "critical", _NVLINK),
    145: Xid("NVLink error (RLW)", "nvlink", "critical", _NVLINK),
    149: Xid("NVLink error (NETIR)", "nvlink", "critical", _NVLINK),
    154: Xid(
        "GPU recovery action changed (reset or reboot needed)",
        "hardware",
        "critical",
        (
            "Reset the GPU or reboot the node as the driver asks (nvidia-smi -q shows the "
            "recovery action)",
            *_HARDWARE[1:],
        ),
    ),
}

#: an Xid not in the table: checked as hardware rather than ignored
UNKNOWN: Final = Xid("see NVIDIA's Xid catalogue", "hardware", "warning", _HARDWARE)


def xid_info(code: int) -> Xid:
    return XIDS.get(code, UNKNOWN)


def describe_xid(code: int) -> str:
    return xid_info(code).meaning


def xid_origin(code: int) -> Origin:
    """Unknown codes count as hardware: better checked than ignored."""
    return xid_info(code).origin
