"""The topology screen: `nvidia-smi topo -m` as a compact matrix with its abbreviations
explained, every GPU's NVLinks, and which NUMA node each GPU and each GPU process is on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gputui.advisor.topology import bus_key, nvswitch_links
from gputui.core.model import DeviceInfo, Frame, GpuSample, ProcessSample
from gputui.core.units import fmt_rate
from gputui.sampling.monitor import Monitor

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


def _link_line(sample: GpuSample | None, device: DeviceInfo) -> Text:
    line = Text()
    line.append(f"GPU{device.index:<3}", style="bold")
    remote = device.nvlink_remote
    if remote is None:
        return line.append("NVLink not readable", style="dim")
    if not remote:
        return line.append("no NVLink (PCIe only)", style="dim")
    version = f"NVLink {device.nvlink_version} " if device.nvlink_version else "NVLink "
    line.append(version)
    links = sample.nvlinks if sample is not None else ()
    for n in links:
        line.append("■" if n.active else "□", style="green" if n.active else "bold red")
    up = sum(1 for n in links if n.active)
    down = [str(n.link) for n in links if n.active is False]
    line.append(f" {up}/{len(remote)} up" if links else f" {len(remote)} links, not read yet")
    if down:
        line.append(f"  down: link {', '.join(down)}", style="bold red")
    rx = sum(n.rx_bps or 0.0 for n in links)
    tx = sum(n.tx_bps or 0.0 for n in links)
    if any(n.rx_bps is not None for n in links):
        line.append(f"  RX {fmt_rate(rx)} TX {fmt_rate(tx)}", style="dim")
    if sample is not None and sample.nvlink_errors is not None:
        style = "bold red" if sample.nvlink_errors else "dim"
        line.append(f"  errors {sample.nvlink_errors}", style=style)
    if sample is not None and sample.fabric_state not in (None, "completed", "none"):
        line.append(f"  fabric {sample.fabric_state}", style="bold red")
    return line


def _process_line(p: ProcessSample, device: DeviceInfo | None) -> Text:
    node = device.numa_node if device is not None else None
    line = Text()
    line.append(f"pid {p.pid:<8}", style="bold")
    line.append(f"{(p.name or '?')[:12]:<13}")
    line.append(f"GPU{p.gpu_index} node {node if node is not None else '?'}  ")
    far = bool(p.cpu_nodes) and node is not None and node not in p.cpu_nodes
    if p.cpus_allowed is None:
        line.append("CPUs not readable", style="dim")
    else:
        nodes = ",".join(str(n) for n in p.cpu_nodes) or "?"
        line.append(f"CPUs {p.cpus_allowed} (node {nodes})", style="bold red" if far else "")
    if p.workers_nodes:
        counts: dict[int, int] = {}
        for n in p.workers_nodes:
            counts[n] = counts.get(n, 0) + 1
        parts = [f"{c} on {'several' if n < 0 else f'node {n}'}" for n, c in sorted(counts.items())]
        line.append("  workers: " + ", ".join(parts))
    total = sum(p.numa_memory)
    if total:
        shares = " ".join(f"n{n} {100 * b / total:.0f}%" for n, b in enumerate(p.numa_memory) if b)
        line.append(f"  mem {shares}")
    return line


def topology_text(devices: Sequence[DeviceInfo], frame: Frame | None) -> Text:
    """The whole screen as one rich Text (outside text is never parsed as markup)."""
    out = Text()
    out.append("Topology", style="bold")
    out.append("  as `nvidia-smi topo -m` shows it; read once when gputui started\n\n", style="dim")
    if not devices or all(d.pcie_topology is None and d.nvlink_remote is None for d in devices):
        out.append("This source gives no topology (remote or recorded readings).\n", style="dim")
    cells = matrix(devices)
    out.append(" " * 7)
    for d in devices:
        out.append(f"{'GPU' + str(d.index):>6}", style="bold")
    out.append("  CPU affinity      NUMA\n", style="bold")
    for d, row in zip(devices, cells, strict=True):
        out.append(f"{'GPU' + str(d.index):<7}", style="bold")
        for cell in row:
            style = "green" if cell.startswith("NV") else "yellow" if cell == "SYS" else ""
            out.append(f"{cell:>6}", style=style)
        out.append(
            f"  {(d.cpu_affinity or '?'):<17} {d.numa_node if d.numa_node is not None else '?'}\n"
        )
    if any(c.startswith("NV") for row in cells for c in row):
        out.append("\nPCIe path", style="bold")
        out.append("  host copies take it even where NVLink joins the GPUs\n", style="dim")
        for d in devices:
            out.append(f"{'GPU' + str(d.index):<7}", style="bold")
            for j in range(len(devices)):
                cell = (
                    "X"
                    if j == d.index
                    else ((d.pcie_topology or ())[j : j + 1] or ("?",))[0] or "?"
                )
                out.append(f"{cell:>6}", style="yellow" if cell == "SYS" else "")
            out.append("\n")
    out.append("\n")
    for abbreviation, meaning in LEGEND:
        out.append(f"  {abbreviation:<5}", style="bold")
        out.append(f"{meaning}\n", style="dim")
    out.append("\nNVLink", style="bold")
    out.append("  per link: ■ up □ down; traffic and errors every 10 s\n", style="dim")
    for d in devices:
        sample = frame.gpu(d.index) if frame is not None else None
        out.append_text(_link_line(sample, d))
        out.append("\n")
    out.append("\nProcesses", style="bold")
    out.append("  where each GPU process may run and where its memory sits\n", style="dim")
    by_index = {d.index: d for d in devices}
    processes = [p for p in (frame.processes if frame is not None else ()) if p.visible]
    if not processes:
        out.append("  no GPU processes\n", style="dim")
    for p in processes:
        out.append("  ")
        out.append_text(_process_line(p, by_index.get(p.gpu_index)))
        out.append("\n")
    return out


class TopologyScreen(ModalScreen[None]):
    """The topology matrix, NVLinks and NUMA placement; refreshed every 2 s while shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,y,enter", "close", "close"),
    ]

    def __init__(self, monitor: Monitor) -> None:
        super().__init__()
        self._monitor = monitor

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog"):
            yield Static(self._text(), id="topology")

    def on_mount(self) -> None:
        self.set_interval(2.0, self._refresh)

    def _text(self) -> Text:
        return topology_text(self._monitor.devices, self._monitor.latest)

    def _refresh(self) -> None:
        self.query_one("#topology", Static).update(self._text())

    def action_close(self) -> None:
        self.dismiss(None)
