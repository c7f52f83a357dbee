"""Findings grouped for a report: one finding on several GPUs reads as one block
("GPUs 0-3: ..."), with what differs between the GPUs said per GPU."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gputui.core.judgement import gpu_list
from gputui.core.model import Finding
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


def _ids(gpus: Sequence[int]) -> str:
    return ",".join(str(g) for g in gpus)


def _generic(text: str, gpu: int | None) -> str:
    """A remedy with its GPU's index as a placeholder: 'nvidia-smi -i 3' -> '-i {ids}'."""
    if gpu is None:
        return text
    return re.sub(rf"(-i\s+){gpu}\b", r"\1{ids}", text)


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
        indices = [g for g in gpus if g is not None]
        generic = [tuple(_generic(r, f.gpu) for r in f.remedies) for f in members]
        if all(g == generic[0] for g in generic):
            remedies = tuple(r.replace("{ids}", _ids(indices)) for r in generic[0])
        else:
            remedies = tuple(dict.fromkeys(r for f in members for r in f.remedies))
        out.append(FindingGroup(rule, severity, title, gpus, evidence, remedies))
    return out


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
