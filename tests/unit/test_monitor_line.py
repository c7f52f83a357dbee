"""The monitor's plain command line (gputui/cli/monitor_line.py): read without argparse, into
what the whole parser reads from it; every other line left to the whole parser."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gputui.cli.monitor_line import MONITOR_DEFAULTS, plain_monitor_line
from gputui.cli.parser import build_parser


def whole(argv: list[str]) -> SimpleNamespace | None:
    """What the whole parser reads from ``argv``; None where it refuses it (or answers
    --help or --version)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return build_parser().parse_args(argv, SimpleNamespace())
        except SystemExit:
            return None


PLAIN = [
    [],
    ["--interval", "2"],
    ["--interval=0.5"],
    ["--interval", " 1e0 "],
    ["--only", "0,2-3", "--theme", "light"],
    ["--readonly", "--keep-secrets", "--interval", "60"],
    ["--theme=dark", "--only=1"],
]


@pytest.mark.parametrize("argv", PLAIN)
def test_a_plain_line_is_read_here_into_what_the_whole_parser_reads(argv: list[str]) -> None:
    plain = plain_monitor_line(argv)
    assert plain is not None
    assert vars(plain) == vars(whole(argv) or SimpleNamespace())


def test_the_defaults_are_the_whole_parsers() -> None:
    assert vars(whole([]) or SimpleNamespace()) == MONITOR_DEFAULTS


NOT_PLAIN = [
    ["--int", "2"],  # abbreviated
    ["--interval", "2", "--interval", "3"],  # twice
    ["--interval", "-1"],
    ["--interval", "0"],  # out of range: argparse says so
    ["--interval"],
    ["--interval", "--readonly"],
    ["--readonly=yes"],
    ["--theme", "blue"],
    ["--only", "x"],
    ["--demo"],
    ["snapshot"],
    ["-h"],
    ["--version"],
    ["--", "--readonly"],
]


@pytest.mark.parametrize("argv", NOT_PLAIN)
def test_anything_else_is_left_to_the_whole_parser(argv: list[str]) -> None:
    assert plain_monitor_line(argv) is None


TOKENS = st.sampled_from(
    [
        "--interval",
        "--only",
        "--theme",
        "--readonly",
        "--keep-secrets",
        "--demo",
        "--gpus",
        "--in",
        "--read",
        "-h",
        "--",
        "snapshot",
        "doctor",
        "2",
        "0.1",
        "-3",
        "nan",
        "1_0",
        "0,1",
        "1-0",
        "light",
        "dark",
        "",
        "--interval=5",
        "--only=2",
        "--theme=light",
        "--readonly=1",
        "--interval=-2",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=6))
def test_whatever_it_reads_the_whole_parser_reads_the_same(argv: list[str]) -> None:
    plain = plain_monitor_line(argv)
    if plain is not None:
        assert vars(plain) == vars(whole(argv) or SimpleNamespace(refused=True))
