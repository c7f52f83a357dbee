"""The unit tier's one rule, enforced: a unit test never starts an app, a server or a pty.
Those belong in tests/functional (run in parallel, and slower by nature); here they fail at
once with a sentence saying where the test goes."""

from __future__ import annotations

import os
import pty
import socket
from typing import Any, NoReturn

import pytest
from textual.app import App

_WHERE = "a unit test never starts {what}: move it to tests/functional"


def _refuse(what: str) -> Any:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError(_WHERE.format(what=what))

    return refuse


@pytest.fixture(autouse=True)
def _no_apps_servers_or_ptys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("run", "run_async", "run_test"):
        monkeypatch.setattr(App, name, _refuse("a Textual app"))
    monkeypatch.setattr(socket.socket, "listen", _refuse("a server (a listening socket)"))
    for module, name in ((pty, "fork"), (pty, "openpty"), (os, "openpty"), (os, "forkpty")):
        monkeypatch.setattr(module, name, _refuse("a pty"))
