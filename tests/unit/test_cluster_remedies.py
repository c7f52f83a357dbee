"""A remedy's command for a cluster's GPU: gputui numbers a cluster's GPUs one after
another, but `nvidia-smi -i` on a node takes the GPU's number there, so the command names
the node and that number, alone and grouped."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor.config_check import check_once
from gputui.advisor.groups import group
from gputui.core.model import DeviceInfo, Frame, GpuSample
from gputui.core.names import RuleId
from tests.advisor_kit import BUSY, H100


def _lowered(nodes: dict[str, int]) -> list[tuple[str, ...]]:
    """Each group's remedies where every GPU of ``nodes`` (name -> GPUs) runs at 500 W of
    its 700 W default."""
    devices: list[DeviceInfo] = []
    samples: list[GpuSample] = []
    for name, count in nodes.items():
        for number in range(count):
            index = len(devices)
            devices.append(
                replace(H100, index=index, node=name or None, node_index=number if name else None)
            )
            samples.append(replace(BUSY, index=index, power_limit_w=500.0))
    findings = check_once(tuple(devices), Frame(time=1.0, gpus=tuple(samples))).findings
    lowered = [f for f in findings if f.rule is RuleId.POWER_LIMIT_LOWERED]
    assert len(lowered) == len(samples)
    return [g.remedies for g in group(lowered)]


def test_a_cluster_gpus_command_names_its_node_and_its_number_there() -> None:
    (remedies,) = _lowered({"node-b": 4})
    assert remedies[0] == "On node-b: Restore it (needs root): sudo nvidia-smi -i 0,1,2,3 -pl 700"
    two = _lowered({"node-a": 2, "node-b": 2})
    assert two == [
        (
            "On node-a: Restore it (needs root): sudo nvidia-smi -i 0,1 -pl 700",
            "Check for a startup script, a datacenter power policy or DCGM that lowers it",
            "On node-b: Restore it (needs root): sudo nvidia-smi -i 0,1 -pl 700",
        )
    ]


def test_a_local_gpus_command_is_as_before() -> None:
    (remedies,) = _lowered({"": 3})
    assert remedies[0] == "Restore it (needs root): sudo nvidia-smi -i 0,1,2 -pl 700"
