"""Findings grouped for a report: one finding on several GPUs reads as one block
("GPUs 0-3: ..."), with what differs between the GPUs said per GPU."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from gputui.advisor.context import smi_target
from gputui.core.judgement import gpu_list
from gputui.core.model import DeviceInfo, Finding
from gputui.core.names import RuleId, Severity
from gputui.core.records import frozen


@frozen
class FindingGroup:
    rule: RuleId
    severity: Severity
    title: str
    gpus: tuple[int | None, ...]  # None: the host
    #: evidence every GPU of the group has in common, then each GPU's own lines
    evidence: tuple[str, ...]
    remedies: tuple[str, ...]

    @property
    def where(self) -> str:
        if self.gpus == (None,):
            return "host"
        return gpu_list([g for g in self.gpus if g is not None])

    def where_on(self, devices: Mapping[int, DeviceInfo]) -> str:
        """``where``, and for a cluster's GPUs their nodes and numbers there, which its
        commands take: "GPU 6 (node-b GPU 2)"."""
        on: dict[str, list[int]] = {}
        for gpu in self.gpus:
            device = devices.get(gpu) if gpu is not None else None
            if gpu is None or device is None or device.node is None:
                return self.where
            on.setdefault(device.node, []).append(smi_target(device, gpu)[1])
        there = "; ".join(f"{node} {gpu_list(numbers)}" for node, numbers in on.items())
        return f"{self.where} ({there})"


_SMI_INDEX = re.compile(r"(-i\s+)(\d+)\b")


def _generic(text: str) -> tuple[str, str | None]:
    """A remedy with its GPU's number as a placeholder ('nvidia-smi -i 3' -> '-i {ids}'),
    and that number: the GPU's own, or (a cluster's GPU) its number on its node, which
    only the remedy knows."""
    numbers = {m[2] for m in _SMI_INDEX.finditer(text)}
    if len(numbers) != 1:
        return text, None
    return _SMI_INDEX.sub(r"\1{ids}", text), numbers.pop()


def group(findings: Sequence[Finding]) -> list[FindingGroup]:
    """The findings as groups of the same rule, severity and title, in the order of their
    first finding (most severe first, as the advisor sorts them)."""
    by_key: dict[tuple[RuleId, Severity, str], list[Finding]] = {}
    for finding in findings:
        by_key.setdefault((finding.rule, finding.severity, finding.title), []).append(finding)
    out = []
    for (rule, severity, title), members in by_key.items():
        gpus = tuple(f.gpu for f in members)
        if len(members) == 1:
            only = members[0]
            out.append(FindingGroup(rule, severity, title, gpus, only.evidence, only.remedies))
            continue
        evidence = _merged([f.evidence for f in members], [f.gpu for f in members])
        out.append(FindingGroup(rule, severity, title, gpus, evidence, _remedies(members)))
    return out


def _remedies(members: Sequence[Finding]) -> tuple[str, ...]:
    """The members' remedies once each, in order; those that differ only in the GPU number
    as one command for all of them ("nvidia-smi -i 0,1,2,3"), per node on a cluster (its
    remedies say "On NODE: "). A remedy that names no GPU and only some members give
    ("Only this GPU is hot ...") is theirs alone: named by its GPUs, and first, as the
    most particular advice."""
    numbers: dict[str, list[str]] = {}
    givers: dict[str, set[int]] = {}
    for finding in members:
        for remedy in finding.remedies:
            text, number = _generic(remedy)
            taken = numbers.setdefault(text, [])
            if number is not None and number not in taken:
                taken.append(number)
            if finding.gpu is not None:
                givers.setdefault(text, set()).add(finding.gpu)
    everyone = len({f.gpu for f in members if f.gpu is not None})
    own = [
        f"{gpu_list(sorted(givers[text]))}: {text}"
        for text, taken in numbers.items()
        if not taken and len(givers.get(text, ())) not in (0, everyone)
    ]
    shared = [
        text.replace("{ids}", ",".join(taken))
        for text, taken in numbers.items()
        if taken or len(givers.get(text, ())) in (0, everyone)
    ]
    return (*own, *shared)


def _label(gpu: int | None) -> str:
    return f"GPU {gpu}" if gpu is not None else "host"


def _merged(lines: Sequence[tuple[str, ...]], gpus: Sequence[int | None]) -> tuple[str, ...]:
    """The members' evidence in its own order: a line every member has, once; where they
    differ, each member's line in that place, named by its GPU."""
    if any(len(each) != len(lines[0]) for each in lines):
        common = [line for line in lines[0] if all(line in each for each in lines)]
        own = [
            f"{_label(gpu)}: {line}"
            for each, gpu in zip(lines, gpus, strict=True)
            for line in each
            if line not in common
        ]
        return (*common, *own)
    out: list[str] = []
    for position, line in enumerate(lines[0]):
        if all(each[position] == line for each in lines):
            out.append(line)
        else:
            out += [
                f"{_label(gpu)}: {each[position]}" for each, gpu in zip(lines, gpus, strict=True)
            ]
    return tuple(out)
