"""The topology rules on synthetic histories: each fires, stays silent, and says "not
judged" where its reading is missing."""

from __future__ import annotations

from dataclasses import replace

from gputui.core.judgement import Undecided
from gputui.core.model import DeviceInfo, GpuSample, NvLinkSample, ProcessSample
from gputui.core.names import RuleId
from tests.advisor_kit import BUSY, H100, TRAINER, Sim

SWITCH = ("00000000:05:00.0", "00000000:06:00.0")
SXM = replace(H100, pci_bus_id="00000000:18:00.0", nvlink_remote=SWITCH * 2, nvlink_version=4)
UP = tuple(NvLinkSample(link=k, active=True, crc_errors=0, replay_errors=0) for k in range(4))
LINKED = replace(BUSY, nvlinks=UP, nvlink_errors=0, fabric_state="completed")


def _rules(sim: Sim) -> set[tuple[str, int | None]]:
    return {(f.rule.value, f.gpu) for f in sim.findings}


def _not_judged(sim: Sim, rule: RuleId) -> list[str]:
    return [n.missing for n in sim.advisor.judgement.not_judged if n.rule == rule]


# -- numa-mismatch --------------------------------------------------------------------
FAR = replace(
    TRAINER,
    cpus_allowed="32-63",
    cpu_nodes=(1,),
    workers_nodes=(1,) * 8,
    numa_memory=(1 << 30, 9 << 30),
)
WAITING = replace(BUSY, util_gpu=60.0)


def test_numa_mismatch_fires_when_pinned_far_and_the_gpu_waits() -> None:
    sim = Sim()
    sim.run(40, WAITING, processes=(FAR,))
    assert ("numa-mismatch", 0) in _rules(sim)
    finding = next(f for f in sim.findings if f.rule == "numa-mismatch")
    text = " | ".join(finding.evidence)
    assert "CPUs 32-63 (NUMA node 1)" in text and "8 of 8 data-loader workers" in text
    assert "90 % of the memory" in text
    assert any("numactl --cpunodebind=0 --membind=0" in r for r in finding.remedies)


def test_numa_mismatch_fires_when_far_and_copying_a_lot() -> None:
    sim = Sim()
    sim.run(40, replace(BUSY, pcie_rx_bps=6e9), processes=(FAR,))
    assert ("numa-mismatch", 0) in _rules(sim)


def test_numa_mismatch_silent_when_far_but_busy_and_not_copying() -> None:
    sim = Sim()
    sim.run(40, BUSY, processes=(FAR,))  # 97 % busy, 2.3 GB/s: nothing it costs
    assert ("numa-mismatch", 0) not in _rules(sim)


def test_numa_mismatch_silent_when_bound_to_the_gpus_node() -> None:
    near = replace(FAR, cpus_allowed="0-31", cpu_nodes=(0,), workers_nodes=(0,) * 8)
    near = replace(near, numa_memory=(9 << 30, 1 << 30))
    sim = Sim()
    sim.run(40, WAITING, processes=(near,))
    assert ("numa-mismatch", 0) not in _rules(sim)
    assert _not_judged(sim, RuleId.NUMA_MISMATCH) == []


def test_numa_mismatch_silent_for_one_process_driving_gpus_on_both_nodes() -> None:
    """One process a host (JAX, DataParallel) on GPUs of both sockets: binding it to one
    node only moves the cost onto the other GPUs, so no node is named."""
    devices = [replace(H100, index=i, numa_node=0 if i < 2 else 1) for i in range(4)]
    one = replace(FAR, cpus_allowed=None, cpu_nodes=(), workers_nodes=())
    sim = Sim(devices=devices)
    for _ in range(40):
        sim.tick(
            [replace(WAITING, index=i) for i in range(4)],
            [replace(one, gpu_index=i) for i in range(4)],
        )
    assert not {r for r, _ in _rules(sim)} & {"numa-mismatch"}
    # the same process on node 0's GPUs only, its memory on node 1: named, with the node
    alone = Sim(devices=devices)
    for _ in range(40):
        alone.tick(
            [replace(WAITING, index=i) for i in range(2)],
            [replace(one, gpu_index=i) for i in range(2)],
        )
    assert {g for r, g in _rules(alone) if r == "numa-mismatch"} == {0, 1}


def test_numa_mismatch_silent_for_an_unpinned_process() -> None:
    sim = Sim()
    sim.run(40, WAITING, processes=(TRAINER,))  # allowed on both nodes
    assert ("numa-mismatch", 0) not in _rules(sim)


def test_numa_mismatch_not_judged_without_the_gpus_node() -> None:
    sim = Sim(devices=(replace(H100, numa_node=None),))
    sim.run(40, WAITING, processes=(FAR,))
    assert ("numa-mismatch", 0) not in _rules(sim)
    assert _not_judged(sim, RuleId.NUMA_MISMATCH) == ["numa-mismatch: the GPU's NUMA node unknown"]


def test_numa_mismatch_not_judged_without_process_affinity() -> None:
    unread = replace(TRAINER, cpus_allowed=None, cpu_nodes=())
    sim = Sim()
    sim.run(40, WAITING, processes=(unread,))
    assert _not_judged(sim, RuleId.NUMA_MISMATCH) == [
        "numa-mismatch: processes' CPU affinity not readable"
    ]


# -- pcie-shared-path -----------------------------------------------------------------
def _pair(topology: tuple[str, str]) -> tuple[DeviceInfo, DeviceInfo]:
    a = replace(H100, index=0, pcie_topology=("X", topology[1]))
    b = replace(H100, index=1, pcie_topology=(topology[0], "X"))
    return a, b


def _pair_run(sim: Sim, rx: float, seconds: int = 40) -> None:
    for _ in range(seconds):
        sim.tick(
            [replace(BUSY, index=0, pcie_rx_bps=rx), replace(BUSY, index=1, pcie_rx_bps=rx)],
            processes=(),
        )


def test_pcie_shared_path_fires_when_the_pair_fills_the_switch_uplink() -> None:
    sim = Sim(devices=_pair(("PIX", "PIX")))
    _pair_run(sim, 27e9)  # 2 x 27 GB/s of a 63 GB/s Gen5 x16 uplink; each 43 % of its link
    assert {("pcie-shared-path", 0), ("pcie-shared-path", 1)} <= _rules(sim)
    finding = next(f for f in sim.findings if f.rule == "pcie-shared-path")
    assert "GPU 0 and GPU 1" in finding.title and "86 % of the switch's uplink" in " ".join(
        finding.evidence
    )


def test_pcie_shared_path_silent_where_the_gpus_exchange_peer_to_peer() -> None:
    """NVML counts peer traffic on each GPU's link, though it stays inside the switch: a
    ring all-reduce between GPUs that reach each other P2P summed to '114 % of the uplink',
    and spreading the ranks would send it through the root complex instead."""
    a, b = _pair(("PIX", "PIX"))
    peers = (replace(a, p2p_read=("X", "OK")), replace(b, p2p_read=("OK", "X")))
    sim = Sim(devices=peers)
    _pair_run(sim, 27e9)
    assert not any(r == "pcie-shared-path" for r, _ in _rules(sim))
    # more than the uplink can carry is no uplink traffic, whatever P2P says
    over = Sim(devices=_pair(("PIX", "PIX")))
    _pair_run(over, 36e9)  # 72 GB/s "through" a 63 GB/s uplink
    assert not any(r == "pcie-shared-path" for r, _ in _rules(over))


def test_pcie_shared_path_silent_when_the_gpus_sit_on_separate_root_ports() -> None:
    sim = Sim(devices=_pair(("NODE", "NODE")))
    _pair_run(sim, 27e9)
    assert not any(r == "pcie-shared-path" for r, _ in _rules(sim))


def test_pcie_shared_path_silent_when_one_gpu_alone_fills_its_link() -> None:
    sim = Sim(devices=_pair(("PIX", "PIX")))
    _pair_run(sim, 45e9)  # each alone at 71 %: pcie-saturated's case, not the path's
    assert not any(r == "pcie-shared-path" for r, _ in _rules(sim))


def test_pcie_shared_path_silent_under_light_traffic() -> None:
    sim = Sim(devices=_pair(("PIX", "PIX")))
    _pair_run(sim, 5e9)
    assert not any(r == "pcie-shared-path" for r, _ in _rules(sim))


def test_pcie_shared_path_not_judged_without_topology() -> None:
    sim = Sim(devices=(replace(H100, pcie_topology=None),))
    sim.run(20, BUSY)
    assert _not_judged(sim, RuleId.PCIE_SHARED_PATH) == ["pcie-shared-path: no PCIe topology"]


# -- nvlink-down / nvlink-errors --------------------------------------------------------
def test_nvlink_down_fires_for_an_inactive_link() -> None:
    down = replace(LINKED, nvlinks=(*UP[:2], replace(UP[2], active=False), UP[3]))
    sim = Sim(devices=(SXM,))
    sim.run(15, down)
    finding = next(f for f in sim.findings if f.rule == "nvlink-down")
    assert finding.severity == "warning" and "1 of 4 NVLinks inactive: link 2" in finding.evidence
    assert "they lead to 00000000:05:00.0" in finding.evidence
    assert finding.remedies[0] == (
        "Check the links: nvidia-smi nvlink -s -i 0 and nvidia-smi nvlink -e -i 0"
    )
    # a cluster's GPU: its node, and its number there
    remote = Sim(devices=(replace(SXM, index=5, node="node-b", node_index=1),))
    remote.run(15, replace(down, index=5))
    (far,) = [f for f in remote.findings if f.rule == "nvlink-down"]
    assert far.remedies[0].startswith("On node-b: Check the links: nvidia-smi nvlink -s -i 1")


def test_nvlink_down_critical_when_every_link_is_down() -> None:
    down = replace(LINKED, nvlinks=tuple(replace(n, active=False) for n in UP))
    sim = Sim(devices=(SXM,))
    sim.run(15, down)
    assert next(f for f in sim.findings if f.rule == "nvlink-down").severity == "critical"


def test_nvlink_down_silent_with_every_link_up_and_on_pcie_cards() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(40, LINKED)
    assert not {"nvlink-down", "nvlink-errors", "fabric-not-ready"} & {r for r, _ in _rules(sim)}
    pcie = Sim()  # H100 of the kit: no NVLink at all
    pcie.run(40, BUSY)
    assert _not_judged(pcie, RuleId.NVLINK_DOWN) == []
    assert _not_judged(pcie, RuleId.FABRIC_NOT_READY) == []


def test_nvlink_down_not_judged_without_link_states() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(15, replace(LINKED, nvlinks=()))
    assert _not_judged(sim, RuleId.NVLINK_DOWN) == ["nvlink-down: NVLink states not read"]
    unknown = Sim(devices=(replace(SXM, nvlink_remote=None),))
    unknown.run(15, LINKED)
    assert _not_judged(unknown, RuleId.NVLINK_DOWN) == ["nvlink-down: no NVLink layout"]


def _erroring(i: int) -> GpuSample:
    crc = 3 * i
    links = (replace(UP[0], crc_errors=crc), *UP[1:])
    return replace(LINKED, nvlinks=links, nvlink_errors=crc)


def test_nvlink_errors_fire_when_the_counters_rise() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(40, _erroring)
    finding = next(f for f in sim.findings if f.rule == "nvlink-errors")
    # 180 CRC errors a minute: retransmitted, a warning (DCGM fails at 100 a second)
    assert finding.severity == "warning"
    assert any(line.startswith("link 0: CRC") for line in finding.evidence)
    assert any(line.startswith("CRC errors only") for line in finding.evidence)
    # one recovery error (the link retrained) while it runs: critical, however rare
    retrained = Sim(devices=(SXM,))
    for i in range(60):
        recovery = 1 if i >= 40 else 0
        links = (replace(UP[0], recovery_errors=recovery), *UP[1:])
        retrained.tick([replace(LINKED, nvlinks=links, nvlink_errors=recovery)])
    (lost,) = [f for f in retrained.findings if f.rule == "nvlink-errors"]
    assert lost.severity == "critical"
    assert "link 0: CRC 0, replay 0, recovery 1" in lost.evidence


def test_nvlink_errors_silent_when_the_counters_stand_still() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(40, replace(LINKED, nvlinks=(replace(UP[0], crc_errors=500), *UP[1:])))
    assert ("nvlink-errors", 0) not in _rules(sim)


def test_nvlink_errors_not_judged_without_counters() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(20, replace(LINKED, nvlink_errors=None))
    assert _not_judged(sim, RuleId.NVLINK_ERRORS) == ["nvlink-errors: no NVLink error counters"]


# -- fabric-not-ready --------------------------------------------------------------------
def test_fabric_not_ready_fires_when_fabric_manager_never_started() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(10, replace(LINKED, fabric_state="not-started"))
    finding = next(f for f in sim.findings if f.rule == "fabric-not-ready")
    assert finding.severity == "critical"
    assert any("nvidia-fabricmanager" in r for r in finding.remedies)


def test_fabric_not_ready_waits_while_registration_is_in_progress() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(30, replace(LINKED, fabric_state="in-progress"))
    assert ("fabric-not-ready", 0) not in _rules(sim)
    sim.run(60, replace(LINKED, fabric_state="in-progress"))
    assert ("fabric-not-ready", 0) in _rules(sim)


def test_fabric_not_ready_silent_when_completed_or_without_nvswitch() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(20, LINKED)
    assert ("fabric-not-ready", 0) not in _rules(sim)
    # two GPUs bridged to each other, no NVSwitch: no fabric to judge
    a = replace(SXM, index=0, pci_bus_id="00000000:18:00.0", nvlink_remote=("00000000:2A:00.0",))
    b = replace(SXM, index=1, pci_bus_id="00000000:2A:00.0", nvlink_remote=("00000000:18:00.0",))
    bridged = Sim(devices=(a, b))
    one = (replace(UP[0], link=0),)
    for _ in range(20):
        bridged.tick(
            [
                replace(LINKED, index=0, nvlinks=one, fabric_state=None),
                replace(LINKED, index=1, nvlinks=one, fabric_state=None),
            ],
            processes=(),
        )
    assert _not_judged(bridged, RuleId.FABRIC_NOT_READY) == []


def test_fabric_not_ready_not_judged_without_fabric_state() -> None:
    sim = Sim(devices=(SXM,))
    sim.run(10, replace(LINKED, fabric_state=None))
    assert _not_judged(sim, RuleId.FABRIC_NOT_READY) == ["fabric-not-ready: no fabric state"]
    # NotSupported (an HGX A100, an older driver: the call is Hopper's): not applicable, and
    # no verdict left incomplete for it (doctor as a health gate would exit 4 for good)
    a100 = Sim(devices=(SXM,))
    a100.run(10, replace(LINKED, fabric_state=None, unsupported=("fabric_state",)))
    assert _not_judged(a100, RuleId.FABRIC_NOT_READY) == []
    offered = a100.advisor.judgement.of(Undecided.NOT_OFFERED)
    assert [(n.rule, n.gpu) for n in offered if n.rule == RuleId.FABRIC_NOT_READY] == [
        (RuleId.FABRIC_NOT_READY, 0)
    ]


def test_process_pinned_elsewhere_is_plain_data() -> None:
    # the rule reads only what the host reader fills: no process is a reading of its own
    assert ProcessSample(pid=1, gpu_index=0).cpu_nodes == ()
