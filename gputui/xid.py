"""What the common Xid codes mean (NVIDIA's Xid catalogue), in a few words, and whose
problem each usually is: the hardware's, or the application's."""

from __future__ import annotations

from typing import Final, Literal

Origin = Literal["hardware", "application", "benign"]

#: code -> (meaning, usual origin)
XIDS: Final[dict[int, tuple[str, Origin]]] = {
    13: ("graphics engine exception (often the application)", "application"),
    31: ("GPU memory page fault (often the application)", "application"),
    43: ("GPU stopped processing (an application reset)", "application"),
    45: ("preemptive cleanup (a process ended)", "benign"),
    48: ("double-bit ECC error", "hardware"),
    61: ("internal micro-controller breakpoint", "hardware"),
    62: ("internal micro-controller halt", "hardware"),
    63: ("ECC page retirement or row remap recorded", "hardware"),
    64: ("ECC page retirement or row remap failed", "hardware"),
    74: ("NVLink error", "hardware"),
    79: ("GPU fell off the bus", "hardware"),
    92: ("high single-bit ECC error rate", "hardware"),
    94: ("contained ECC error", "hardware"),
    95: ("uncontained ECC error", "hardware"),
    119: ("GSP RPC timeout", "hardware"),
    120: ("GSP error", "hardware"),
    140: ("unrecovered ECC error", "hardware"),
    154: ("GPU recovery action changed (reset or reboot needed)", "hardware"),
}


def describe_xid(code: int) -> str:
    return XIDS[code][0] if code in XIDS else "see NVIDIA's Xid catalogue"


def xid_origin(code: int) -> Origin:
    """Unknown codes count as hardware: better checked than ignored."""
    return XIDS[code][1] if code in XIDS else "hardware"
