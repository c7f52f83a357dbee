"""The engine's rules as `gputui rules` writes them, without Prometheus (the promtool cases
are in tests/functional/test_engine_rules.py): every catalogue rule evaluated or listed with
its reason, windows and holds at the scrape interval, the user's --match in every
selector and never out of its string, each engine's group options."""

from __future__ import annotations

import json
import re

import pytest

from gputui.advisor import RULES
from gputui.advisor.promrules import NOT_WRITTEN, Terms, engine, not_in_engine
from gputui.advisor.promrules.promql import duration
from gputui.cli import main
from gputui.core.names import RuleId
from gputui.exporters.rules_file import ENGINES, rules_yaml


def test_every_rule_is_in_the_engine_or_listed_with_why_not() -> None:
    found = engine(Terms(30.0))
    missing = not_in_engine(RULES, found.by_rule())
    assert set(found.by_rule()) | set(missing) == {r.id for r in RULES}
    assert not set(found.by_rule()) & set(missing)
    # each with its own reason: none is left without an engine form
    assert NOT_WRITTEN not in missing.values(), missing
    # (which is what a rule an exporter feeds gets without one)
    assert not_in_engine(RULES, {})[RuleId.FAN_FAULT] == NOT_WRITTEN
    assert "application clocks" in missing[RuleId.CLOCKS_LIMITED]
    assert "GPU processes" in missing[RuleId.INPUT_STARVED]
    for rule in (RuleId.CLOCKS_HELD, RuleId.NOT_REPORTING, RuleId.STRAGGLER, RuleId.GPU_ERRORS):
        assert rule in found.by_rule()
    for rule in (RuleId.BUSY_NO_WORK, RuleId.FAN_FAULT, RuleId.COLLECTIVE_HANG):
        assert rule in found.by_rule()


@pytest.mark.parametrize(("scrape_s", "window"), [(15.0, "83s"), (30.0, "165s"), (60.0, "330s")])
def test_windows_and_holds_stretch_to_the_scrape_interval(scrape_s: float, window: str) -> None:
    found = engine(Terms(scrape_s))
    alerts = {a.name: a for a in found.alerts}
    # the figures several alerts read are recorded once, over the stretched window
    recorded = {r.name: r.expr for r in found.recordings}
    assert f"[{window}]" in recorded["gputui:dcgm_gpu:temp_c_avg"]
    assert f"[{window}:{duration(scrape_s)}]" in recorded["gputui:dcgm_gpu:reasons_60_share"]
    assert "gputui:dcgm_gpu:reasons_60_share >= 0.3" in alerts["GputuiThermalThrottle"].expr
    for alert in found.alerts:  # at least two evaluations in a row
        assert alert.for_s >= scrape_s, alert.name
        assert alert.keep_s >= 2 * scrape_s
    assert alerts["GputuiXidBus32"].for_s == scrape_s  # the live finding shows at once
    assert alerts["GputuiStragglerClock"].for_s == Terms(scrape_s).window  # a window of it


def test_the_match_is_in_every_selector_and_cannot_leave_its_string() -> None:
    hostile = 'cluster="a\\"} or vector(1) #",\njob="dcgm"'
    terms = Terms(30.0, hostile)
    text = rules_yaml(engine(terms), terms)
    for line in text.splitlines():
        if line.strip().startswith('expr: "'):
            expr = json.loads(line.split("expr:", 1)[1])  # one YAML double-quoted scalar
            for name in re.findall(r"\b(DCGM_FI_\w+|gputui:dcgm_gpu:\w+)\{", expr):
                assert f"{name}{{{terms.match}}}" in expr
    assert "\n#" not in text.split("groups:")[1]  # no comment smuggled in by the match


def test_each_engine_gets_its_group_options() -> None:
    terms = Terms(30.0)
    found = engine(terms)
    plain = rules_yaml(found, terms)
    assert "partial_response_strategy" not in plain and "params" not in plain
    thanos = rules_yaml(found, terms, "thanos")
    assert thanos.count('partial_response_strategy: "abort"') == 1
    vm = rules_yaml(found, terms, "vmalert")
    assert vm.count('denyPartialResponse: ["true"]') == 1
    assert set(ENGINES) == {"prometheus", "vmalert", "thanos"}
    # the rules themselves are the same
    strip = re.compile(r"^    (partial_response_strategy|params|  \w+): .*\n|^    params:\n", re.M)
    assert strip.sub("", thanos).split("groups:")[1] == plain.split("groups:")[1]
    assert strip.sub("", vm).split("groups:")[1] == plain.split("groups:")[1]


def test_the_file_names_what_the_engine_cannot_express(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["rules", "--scrape-interval", "15", "--job-label", "slurm_job"]) == 0
    text = capsys.readouterr().out
    head = text.split("groups:")[0]
    assert "# not in the engine" in head and "#   input-starved: " in head
    assert 'scrape_interval: "15s"' in text
    assert '\\"slurm_job\\"' in text and "exported_pod" not in text.split("groups:")[1]
    assert "- alert: GputuiClocksHeld" in text
