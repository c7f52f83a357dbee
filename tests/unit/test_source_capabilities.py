"""What each source can do beyond the contract is said by the small protocols of
core/source.py, and the composition root asks them with isinstance: each source class
answers for the capabilities it has and no other, and no module probes a source for a
method by its name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gputui.core.source import Backfills, CatchesUp, Follows, Glances, TopologyLater
from gputui.sources.nvml.source import NvmlSource
from gputui.sources.prometheus.source import PrometheusSource
from gputui.sources.recorded import ReplaySource
from gputui.sources.remote import RemoteSource
from gputui.sources.simulated import SimulatedSource

PACKAGE = Path(__file__).resolve().parent.parent.parent / "gputui"
CAPABILITIES = (Follows, Backfills, CatchesUp, Glances, TopologyLater)


@pytest.mark.parametrize(
    ("source", "has"),
    [
        (NvmlSource, {Glances, TopologyLater}),
        (PrometheusSource, {Follows, Backfills, CatchesUp}),
        (SimulatedSource, {Backfills, CatchesUp}),
        (RemoteSource, set()),
        (ReplaySource, set()),
    ],
)
def test_each_source_has_the_capabilities_it_implements(source: type, has: set[type]) -> None:
    assert all(callable(getattr(source, name, None)) for name in ("open", "read", "close"))
    # an instance made without its constructor (which opens libraries or files): the
    # protocols ask only for the methods, which the class has
    bare: object = object.__new__(source)
    assert {c for c in CAPABILITIES if isinstance(bare, c)} == has


def test_no_module_asks_a_source_for_a_method_by_its_name() -> None:
    probes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and node.args
                and isinstance(node.args[0], ast.Name)
                and "source" in node.args[0].id
            ):
                probes.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not probes
