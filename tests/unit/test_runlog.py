"""The run log: finding episodes as the advisor hands findings over, tick by tick."""

from __future__ import annotations

import random

import pytest

from gputui.core.model import Finding, Frame
from gputui.core.names import RuleId, Severity
from gputui.sampling import runlog
from gputui.sampling.runlog import RunLog

_RULES = (RuleId.THERMAL_THROTTLE, RuleId.POWER_CAP, RuleId.VRAM_PRESSURE)


def _story(seed: int) -> list[tuple[Frame, tuple[Finding, ...]]]:
    """Ticks with the findings an advisor judging every few ticks hands over: a new tuple
    at each judgement, the same one between them; findings come, go and come back."""
    rnd = random.Random(seed)
    since: dict[tuple[RuleId, int], float] = {}
    out: list[tuple[Frame, tuple[Finding, ...]]] = []
    current: tuple[Finding, ...] = ()
    for k in range(400):
        now = 1000.0 + k
        if k % rnd.choice((1, 2, 5)) == 0:  # a judgement
            found = []
            for rule in _RULES:
                for gpu in range(3):
                    key = (rule, gpu)
                    if rnd.random() < 0.6:
                        start = since.setdefault(key, now)
                        found.append(
                            Finding(rule, Severity.WARNING, gpu, "t", ("e",), ("r",), start, now)
                        )
                    else:
                        since.pop(key, None)
            current = tuple(found)
        out.append((Frame(time=now, gpus=()), current))
    return out


@pytest.mark.parametrize("cap", [runlog.MAX_EPISODES, 7])
def test_the_same_findings_handed_over_again_tell_the_story_a_copy_tells(
    cap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two judgements the advisor hands over the same tuple: the log skips it.
    Its episodes, and what it dropped past its cap, are those of a log handed a fresh
    copy every tick (which it cannot skip)."""
    monkeypatch.setattr(runlog, "MAX_EPISODES", cap)
    for seed in range(5):
        story = _story(seed)
        same, copied = RunLog(None), RunLog(None)
        for frame, found in story:
            same.add(frame, found)
            copied.add(frame, tuple(list(found)))
        same.finish()
        copied.finish()
        shown = [(e.key, e.since, e.until, e.open, e.finding) for e in same.episodes]
        assert shown == [(e.key, e.since, e.until, e.open, e.finding) for e in copied.episodes]
        assert same.dropped == copied.dropped
        assert len(shown) >= min(cap, 10) and (cap > 10 or same.dropped > 0)
