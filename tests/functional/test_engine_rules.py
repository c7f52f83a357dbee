"""`gputui rules` against Prometheus' own tools: the generated file passes `promtool check
rules`, and `promtool test rules` runs one case a rule (every alert, healthy and faulty
series, the annotations rendered). promtool ships with Debian's
`prometheus` package; where it is absent the test skips, except in CI (CI=true)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gputui.advisor.promrules import Terms, engine
from gputui.cli import main
from gputui.exporters.rules_file import ENGINES, rules_yaml
from tests.engine_cases import cases, promtool_tests
from tests.prom_cluster import require


def _promtool() -> str:
    require("promtool")  # Debian's prometheus package ships it
    return "promtool"


@pytest.mark.parametrize("scrape_s", [15.0, 30.0], ids=["15s", "30s"])
def test_every_rule_has_a_promtool_case_and_passes_it(tmp_path: Path, scrape_s: float) -> None:
    """At the operator's 15 s and dcgm-exporter's 30 s: the windows and holds stretch, and
    a case's series are written for any interval."""
    promtool = _promtool()
    terms = Terms(scrape_s)
    rules = engine(terms)
    (tmp_path / "rules.yml").write_text(rules_yaml(rules, terms))
    planted = cases(scrape_s)
    covered = {e.alert for case in planted for e in case.expected}
    assert covered == {alert.name for alert in rules.alerts}  # one case an alert at least
    (tmp_path / "tests.yml").write_text(promtool_tests(rules, "rules.yml", scrape_s, planted))
    done = subprocess.run(
        [promtool, "test", "rules", "tests.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]


def test_the_generated_file_passes_promtool_check_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    promtool = _promtool()
    out = tmp_path / "gputui-rules.yml"
    argv = ["rules", "--scrape-interval", "15", "--match", 'cluster="a b",job=~"dcgm.*"']
    assert main([*argv, "-o", str(out)]) == 0
    done = subprocess.run(
        [promtool, "check", "rules", str(out)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # the other engines' files are the same rules with their group options
    for flavour in ENGINES:
        assert main(["rules", "--engine", flavour]) == 0
        text = capsys.readouterr().out
        assert f"the advisor's rules for {flavour}" in text
