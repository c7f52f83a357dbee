"""The host line, as nvitop's header has it: CPU, memory, swap, load, uptime, the clock.
The data loaders run on these CPUs: a busy host is half of a slow job."""

from __future__ import annotations

import time

from gputui.core.config import Thresholds
from gputui.core.model import HostSample
from gputui.core.units import fmt_bytes, fmt_duration, fmt_num, known
from gputui.view import levels
from gputui.view.cells import Cell, Role, Row
from gputui.view.glyphs import bar


def _uptime(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    if days:
        return f"{days} d {hours:02d} h"
    return fmt_duration(hours * 3600 + (rest // 60) * 60) if hours else fmt_duration(rest)


def host_row(host: HostSample | None, now: float | None, t: Thresholds) -> Row:
    """'CPU ███▌   23 %  MEM 120/503 GiB  SWAP 0 B of 8 GiB  load 3.2 2.9 2.5  up 12 d 03 h
    14:03:22'. The clock is the frame's time: a replay shows when it was recorded."""
    if host is None:
        return Row((Cell("host: no readings from this source", Role.DIM),))
    cpu = host.cpu_percent
    cpu_role = (
        levels.level(cpu, t.host_cpu_saturated_pct, float("inf")) if cpu is not None else Role.DIM
    )
    cells = [Cell("CPU ", bold=True), bar(None if cpu is None else cpu / 100, 10, cpu_role)]
    cells.append(Cell(f" {fmt_num(cpu):>3} %", cpu_role if cpu is not None else Role.DIM))
    if host.cpu_count:
        cells.append(Cell(f" of {host.cpu_count}", Role.DIM, drop=4))
    if known(host.mem_total) and known(host.mem_available):
        assert host.mem_total is not None and host.mem_available is not None
        used = host.mem_total - host.mem_available
        cells.append(Cell("  MEM ", bold=True))
        cells.append(
            Cell(
                f"{fmt_bytes(used)} of {fmt_bytes(host.mem_total)}",
                Role.CRIT
                if 100 * host.mem_available < t.host_available_pct * host.mem_total
                else Role.PLAIN,
            )
        )
    if known(host.swap_total) and host.swap_total:
        cells.append(Cell("  SWAP ", bold=True, drop=2))
        cells.append(Cell(f"{fmt_bytes(host.swap_used)} of {fmt_bytes(host.swap_total)}", drop=2))
    if host.load_1 is not None:
        loads = " ".join(
            f"{v:.2f}" for v in (host.load_1, host.load_5, host.load_15) if v is not None
        )
        cells.append(Cell(f"  load {loads}", drop=1))
    if host.uptime_s is not None:
        cells.append(Cell(f"  up {_uptime(host.uptime_s)}", Role.DIM, drop=3))
    if now is not None:
        cells.append(Cell(f"  {time.strftime('%H:%M:%S', time.localtime(now))}", drop=5))
    return Row(tuple(cells))
