"""`gputui rules`: the advisor's catalogue as Prometheus rules, at the cluster's scrape
interval (given, or measured on a Prometheus server)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from gputui.cli.exits import EXIT_NO_SOURCE
from gputui.cli.opening import write_output
from gputui.cli.parser import RULES_SCRAPE_S
from gputui.core.sanitize import clean
from gputui.core.source import SourceUnavailable


def cmd_rules(args: SimpleNamespace) -> int:
    from gputui.advisor.promrules import Terms, engine
    from gputui.exporters.rules_file import rules_yaml

    match = getattr(args, "match", None)
    scrape_s = args.scrape_interval
    url = getattr(args, "prometheus", None)
    if scrape_s is None and url:
        from gputui.sources.prometheus.source import PrometheusSource

        try:
            scrape_s = PrometheusSource(url, match).scrape_interval()
        except SourceUnavailable as exc:
            print(f"gputui: {clean(str(exc))}", file=sys.stderr)
            return EXIT_NO_SOURCE
    terms = Terms(scrape_s or RULES_SCRAPE_S, match, args.job_label or Terms.JOB_LABELS)
    return write_output(rules_yaml(engine(terms), terms, args.engine), args.output)
