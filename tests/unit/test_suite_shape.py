"""The suite's own shape: one name a test file across the tiers, and the unit tier's rule
(no app, no server, no pty; tests/unit/conftest.py) actually enforced."""

from __future__ import annotations

import os
import socket
from collections import Counter
from pathlib import Path

import pytest

from gputui.launch import make_demo_app

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_files_share_a_name() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert len(names) > 40
    assert not [n for n, count in names.items() if count > 1]


def test_a_unit_test_cannot_listen_open_a_pty_or_run_an_app() -> None:
    with socket.socket() as s, pytest.raises(AssertionError, match="tests/functional"):
        s.listen()
    with pytest.raises(AssertionError, match="a pty"):
        os.openpty()
    app = make_demo_app(None, 1)
    with pytest.raises(AssertionError, match="Textual app"):
        app.run_test()
