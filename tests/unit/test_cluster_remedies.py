"""A remedy's command for a cluster's GPU: gputui numbers a cluster's GPUs one after
another, but `nvidia-smi -i` on a node takes the GPU's number there, so the command names
the node and that number, alone and grouped."""

from __future__ import annotations

from dataclasses import replace

from gputui.advisor.config_check import check_once
from gputui.advisor.groups import group
from gputui.core.model import DeviceInfo, Finding, Frame, GpuSample
from gputui.core.names import RuleId, Severity
from tests.advisor_kit import BUSY, H100, Sim


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


def test_a_reset_names_the_node_and_the_gpus_number_there() -> None:
    """A reset is the remedy where a wrong number does harm: `nvidia-smi -r -i 6` on a node
    with GPUs 0-3 fails, on a bigger one resets another GPU."""
    devices = tuple(replace(H100, index=4 + n, node="node-b", node_index=n) for n in range(4))
    failing = replace(BUSY, index=6, ecc_volatile_uncorrected=2)
    sim = Sim(devices=devices)
    for _ in range(5):
        sim.tick([failing if d.index == 6 else replace(BUSY, index=d.index) for d in devices])
    (health,) = [f for f in sim.findings if f.rule is RuleId.MEMORY_HEALTH]
    assert health.remedies[1].startswith("On node-b: Reset it when idle (sudo nvidia-smi -r -i 2)")
    assert "-i 6" not in " ".join(health.remedies)
    (block,) = group([health])
    assert block.where_on({d.index: d for d in devices}) == "GPU 6 (node-b GPU 2)"


def test_a_remedy_only_some_gpus_of_a_group_give_is_named_by_them_and_first() -> None:
    def hot(gpu: int, *own: str) -> Finding:
        common = ("Check the server's airflow", "Clean dust from heatsinks")
        return Finding(
            rule=RuleId.THERMAL_HOT,
            severity=Severity.WARNING,
            gpu=gpu,
            title="Running hot",
            evidence=("86 °C",),
            remedies=(*own, *common),
            since=0.0,
            updated=1.0,
        )

    members = [hot(0), hot(1), hot(2), hot(5, "Only this GPU is hot (88 °C): its own fan")]
    (block,) = group(members)
    assert block.remedies == (
        "GPU 5: Only this GPU is hot (88 °C): its own fan",
        "Check the server's airflow",
        "Clean dust from heatsinks",
    )
    assert block.where_on({}) == "GPUs 0-2, 5"
