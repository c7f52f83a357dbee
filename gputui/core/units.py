"""Human formatting of model units, shared by the reports and the screen."""

from __future__ import annotations

import math
import time

NA = "n/a"


def known(value: float | int | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def fmt_bytes(value: float | int | None, digits: int = 1) -> str:
    if not known(value):
        return NA
    assert value is not None
    v = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.{digits}f} {unit}"
        v /= 1024
    return NA  # unreachable


def fmt_rate(value: float | None) -> str:
    """Bytes/s in decimal units, as PCIe bandwidth is quoted (GB/s)."""
    if not known(value):
        return NA
    assert value is not None
    for unit, scale in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B/s"


def fmt_num(value: float | int | None, unit: str = "", digits: int = 0) -> str:
    if not known(value):
        return NA
    assert value is not None
    return f"{value:.{digits}f}{unit}"


def fmt_duration(seconds: float) -> str:
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def fmt_time(when: float) -> str:
    """A moment as local date and clock time, to the second: '2026-12-06 14:05:37'."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))


def fmt_age(seconds: float) -> str:
    """A coarse age ('<1 min', '12 min', '2 h 05 min'): it changes once a minute, not every
    second, so a list of ages does not repaint on every tick."""
    minutes = int(max(0.0, seconds) // 60)
    if minutes < 1:
        return "<1 min"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def short_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3': the vendor is the same on every row."""
    for prefix in ("NVIDIA ", "Tesla "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name


def vram_text(used: int | None, total: int | None) -> str:
    """'59.9/79.6 GiB'."""
    if not known(used) or not known(total):
        return NA
    assert used is not None and total is not None
    return f"{used / 1024**3:.1f}/{total / 1024**3:.1f} GiB"


def fmt_link(gen: int | None, width: int | None) -> str:
    """'Gen5 x16'; the known half alone ('Gen5', 'x16'); n/a when neither is known.
    Never 'Genn/a xn/a'."""
    parts = ([f"Gen{gen}"] if known(gen) else []) + ([f"x{width}"] if known(width) else [])
    return " ".join(parts) or NA


def fmt_of(value: float | int | None, limit: float | int | None, unit: str = "") -> str:
    """'1380/1980 MHz'; the value alone when the limit is unknown; n/a without a value.
    Never '1980/n/a'."""
    suffix = f" {unit}" if unit else ""
    if not known(value):
        return NA
    if not known(limit):
        return f"{fmt_num(value)}{suffix}"
    return f"{fmt_num(value)}/{fmt_num(limit)}{suffix}"
