"""A cluster read from a Prometheus server's HTTP API (or Thanos, VictoriaMetrics, Mimir).

The modules call one another one way, top to bottom (an import-linter contract holds it):
``source`` (PrometheusSource, what the rest of gputui opens) asks ``ranges`` for history
and ``reads`` for each tick; ``reads`` and ``columns`` turn paged answers into readings
(frames, or a point-in-time read's columns); ``alerts`` reads the engine's verdict;
``nodes`` keeps the cluster's census, scrape intervals and caps; ``queries`` writes the
PromQL and ``wire`` makes the one bounded call and checks the answer.
"""
