"""The topology page: `nvidia-smi topo -m` as a compact matrix with its abbreviations
explained, every GPU's NVLinks, and which NUMA node each GPU and each GPU process is on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gputui.advisor.topology import bus_key, nvswitch_links
from gputui.core.model import DeviceInfo, Frame, GpuSample, ProcessSample
from gputui.core.units import fmt_rate
from gputui.view.cells import Cell, Panel, Role, Row

LEGEND = (
    ("X", "the GPU itself"),
    ("NV#", "joined by # NVLinks (through the NVSwitches: the fewer of the two GPUs' links)"),
    ("PIX", "one PCIe switch between them"),
    ("PXB", "several PCIe switches, no host bridge"),
    ("PHB", "a PCIe host bridge (the CPU's root complex)"),
    ("NODE", "the host bridges of one NUMA node"),
    ("SYS", "across NUMA nodes: the socket interconnect (UPI, Infinity Fabric)"),
    ("BRD", "on the same board"),
)


def _nvlinks_between(a: DeviceInfo, b: DeviceInfo, devices: Mapping[int, DeviceInfo]) -> int:
    direct = sum(
        1
        for r in a.nvlink_remote or ()
        if r and b.pci_bus_id and bus_key(r) == bus_key(b.pci_bus_id)
    )
    if direct:
        return direct
    return min(nvswitch_links(a, devices), nvswitch_links(b, devices))


def matrix(devices: Sequence[DeviceInfo]) -> list[list[str]]:
    """The `topo -m` cells: NVLink where the GPUs have it, else their PCIe path."""
    by_index = {d.index: d for d in devices}
    rows = []
    for a in devices:
        row = []
        for b in devices:
            if a.index == b.index:
                row.append("X")
                continue
            links = _nvlinks_between(a, b, by_index)
            if links:
                row.append(f"NV{links}")
                continue
            cells = a.pcie_topology or ()
            row.append((cells[b.index] if b.index < len(cells) else "") or "?")
        rows.append(row)
    return rows


def _cell_role(cell: str) -> Role:
    return Role.OK if cell.startswith("NV") else Role.WARN if cell == "SYS" else Role.PLAIN


def _heading(title: str, note: str) -> Row:
    return Row((Cell(title, bold=True), Cell(f"  {note}", Role.DIM, flex=True)))


def _link_row(sample: GpuSample | None, device: DeviceInfo) -> Row:
    cells = [Cell(f"GPU{device.index:<3}", bold=True)]
    remote = device.nvlink_remote
    if remote is None:
        return Row((*cells, Cell("NVLink not readable", Role.DIM)))
    if not remote:
        return Row((*cells, Cell("no NVLink (PCIe only)", Role.DIM)))
    version = f"NVLink {device.nvlink_version} " if device.nvlink_version else "NVLink "
    cells.append(Cell(version))
    links = sample.nvlinks if sample is not None else ()
    for n in links:
        cells.append(Cell("■", Role.OK) if n.active else Cell("□", Role.CRIT, bold=True))
    up = sum(1 for n in links if n.active)
    down = [str(n.link) for n in links if n.active is False]
    cells.append(
        Cell(f" {up}/{len(remote)} up" if links else f" {len(remote)} links, not read yet")
    )
    if down:
        cells.append(Cell(f"  down: link {', '.join(down)}", Role.CRIT, bold=True))
    if any(n.rx_bps is not None for n in links):
        rx = sum(n.rx_bps or 0.0 for n in links)
        tx = sum(n.tx_bps or 0.0 for n in links)
        cells.append(Cell(f"  RX {fmt_rate(rx)} TX {fmt_rate(tx)}", Role.DIM))
    if sample is not None and sample.nvlink_errors is not None:
        role = Role.CRIT if sample.nvlink_errors else Role.DIM
        cells.append(Cell(f"  errors {sample.nvlink_errors}", role))
    if sample is not None and sample.fabric_state not in (None, "completed", "none"):
        cells.append(Cell(f"  fabric {sample.fabric_state}", Role.CRIT, bold=True))
    return Row(tuple(cells))


def _process_row(p: ProcessSample, device: DeviceInfo | None) -> Row:
    node = device.numa_node if device is not None else None
    cells = [
        Cell("  "),
        Cell(f"pid {p.pid:<8}", bold=True),
        Cell(f"{(p.name or '?')[:12]:<13}"),
        Cell(f"GPU{p.gpu_index} node {node if node is not None else '?'}  "),
    ]
    far = bool(p.cpu_nodes) and node is not None and node not in p.cpu_nodes
    if p.cpus_allowed is None:
        cells.append(Cell("CPUs not readable", Role.DIM))
    else:
        nodes = ",".join(str(n) for n in p.cpu_nodes) or "?"
        role = Role.CRIT if far else Role.PLAIN
        cells.append(Cell(f"CPUs {p.cpus_allowed} (node {nodes})", role, bold=far))
    if p.workers_nodes:
        counts: dict[int, int] = {}
        for n in p.workers_nodes:
            counts[n] = counts.get(n, 0) + 1
        parts = [f"{c} on {'several' if n < 0 else f'node {n}'}" for n, c in sorted(counts.items())]
        cells.append(Cell("  workers: " + ", ".join(parts)))
    total = sum(p.numa_memory)
    if total:
        shares = " ".join(f"n{n} {100 * b / total:.0f}%" for n, b in enumerate(p.numa_memory) if b)
        cells.append(Cell(f"  mem {shares}"))
    return Row(tuple(cells))


def _matrix_rows(devices: Sequence[DeviceInfo], cells: list[list[str]]) -> list[Row]:
    shown = devices if any(cells) else ()  # no path known: the CPUs and NUMA node alone
    head = [Cell(" " * 7)] + [Cell(f"{'GPU' + str(d.index):>6}", bold=True) for d in shown]
    rows = [Row((*head, Cell("  CPU affinity      NUMA", bold=True)))]
    for d, line in zip(devices, cells, strict=True):
        numa = d.numa_node if d.numa_node is not None else "?"
        rows.append(
            Row(
                (
                    Cell(f"{'GPU' + str(d.index):<7}", bold=True),
                    *(Cell(f"{cell:>6}", _cell_role(cell)) for cell in line),
                    Cell(f"  {(d.cpu_affinity or '?'):<17} {numa}"),
                )
            )
        )
    return rows


def _pcie_rows(devices: Sequence[DeviceInfo]) -> list[Row]:
    rows = [_heading("PCIe path", "host copies take it even where NVLink joins the GPUs")]
    for d in devices:
        paths = []
        for j in range(len(devices)):
            cell = "X" if j == d.index else ((d.pcie_topology or ())[j : j + 1] or ("?",))[0]
            paths.append(Cell(f"{cell or '?':>6}", Role.WARN if cell == "SYS" else Role.PLAIN))
        rows.append(Row((Cell(f"{'GPU' + str(d.index):<7}", bold=True), *paths)))
    return rows


def _no_paths(devices: Sequence[DeviceInfo]) -> str | None:
    """Why no GPU's PCIe path to another is known, or None where some are."""
    if any(d.pcie_topology is not None for d in devices):
        return None
    if devices and all("pcie_topology" in d.unsupported for d in devices):
        return (
            "This driver gives no PCIe paths between the GPUs (NVML's topology call is not "
            "supported here): how they connect is unknown, so no matrix."
        )
    if all(d.nvlink_remote is None for d in devices):
        return "This source gives no topology (remote or recorded readings)."
    return "The PCIe paths between the GPUs could not be read: no matrix."


def _matrix_part(devices: Sequence[DeviceInfo]) -> list[Row]:
    """The matrix with the abbreviations it uses explained, or where no path is known,
    why, and each GPU's CPUs and NUMA node alone (never a grid of question marks)."""
    blank = Row((Cell(""),))
    cells = matrix(devices)
    links = any(c.startswith("NV") for row in cells for c in row)
    why = _no_paths(devices)
    rows = []
    if why is not None:
        rows.append(Row((Cell(why, Role.DIM, flex=True),)))
        if not links:
            cells = [[] for _ in devices]
    rows += _matrix_rows(devices, cells)
    if links and why is None:
        rows += [blank, *_pcie_rows(devices)]
    used = {c for row in cells for c in row}
    legend = list(LEGEND) if used else []
    unsaid = any(d.cpu_affinity is None or d.numa_node is None for d in devices)
    if "?" in used or unsaid:
        legend.append(("?", "not read: the driver did not say"))
    if legend:
        rows.append(blank)
    for abbreviation, meaning in legend:
        rows.append(Row((Cell(f"  {abbreviation:<5}", bold=True), Cell(meaning, Role.DIM))))
    return rows


def topology_page(devices: Sequence[DeviceInfo], frame: Frame | None) -> Panel:
    """The whole page (outside text stays text: rows of cells, never markup)."""
    blank = Row((Cell(""),))
    rows = [_heading("Topology", "as `nvidia-smi topo -m` shows it; read once when gputui started")]
    rows.append(blank)
    rows += _matrix_part(devices)
    rows += [blank, _heading("NVLink", "per link: ■ up □ down; traffic and errors every 10 s")]
    for d in devices:
        rows.append(_link_row(frame.gpu(d.index) if frame is not None else None, d))
    rows += [
        blank,
        _heading("Processes", "where each GPU process may run and where its memory sits"),
    ]
    by_index = {d.index: d for d in devices}
    processes = [p for p in (frame.processes if frame is not None else ()) if p.visible]
    if not processes:
        rows.append(Row((Cell("  no GPU processes", Role.DIM),)))
    rows += [_process_row(p, by_index.get(p.gpu_index)) for p in processes]
    return Panel("Topology", tuple(rows))
