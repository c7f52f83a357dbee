"""One way to a signal (issue 52): the process page followed a reused PID because it asked
for its signal its own way. Every path that signals (the table, a process page, the
every-process page, and any later one, a multi-select among them) asks
``view.process_keys.ask_signal`` with the PID and the start time it was opened for; only
that function makes the confirmation (``ask_signals`` the tagged processes' one, through the
same check), only ``answer`` (``answer_each``) sends, and only the confirmation's answer
calls it. Held here over the package's source, so a new path cannot go round it."""

from __future__ import annotations

import ast
from pathlib import Path

import gputui

PACKAGE = Path(gputui.__file__).resolve().parent


def _calls() -> list[tuple[str, str, str]]:
    """(module, enclosing function, called name) for every call in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    found.append((module, function.name, name))
    return found


CALLS = _calls()


def _where(name: str) -> set[tuple[str, str]]:
    return {(module, function) for module, function, called in CALLS if called == name}


def test_only_ask_signal_makes_a_signals_confirmation() -> None:
    """One process's confirmation, or the tagged processes' one: each made in one place,
    and both over the one check of a PID and its start (``checked``)."""
    assert _where("AskSignal") == {("view/process_keys.py", "ask_signal")}
    assert _where("AskSignals") == {("view/process_keys.py", "ask_signals")}
    assert _where("checked") == {
        ("view/process_keys.py", "ask_signal"),
        ("view/process_keys.py", "ask_signals"),
    }


def test_only_the_confirmations_answer_sends_a_signal() -> None:
    senders = {w for w in _where("send") if not w[0].startswith("exporters/")}
    assert senders == {("view/process_keys.py", "answer"), ("view/process_keys.py", "answer_each")}
    assert {module for module, _ in _where("answer")} == {"ui/modals.py"}
    assert {module for module, _ in _where("answer_each")} == {"ui/modals.py"}
    assert {m for m, _ in _where("_kill")} == {"sources/process_access.py"}


def test_every_signal_key_asks_through_ask_signal() -> None:
    """Every ``action_signal`` of the screen asks ``process_keys.signal`` (the table's
    selection) or ``ask_signal`` (a page's own process), and nothing else reaches a
    signal; ``signal`` itself asks ``ask_signal``."""
    actions = {
        module: {called for m, f, called in CALLS if m == module and f == "action_signal"}
        for module, function, _ in CALLS
        if function == "action_signal"
    }
    assert actions, "no signal key found"
    for module, called in actions.items():
        assert called & {"signal", "ask_signal"}, (module, called)
    assert ("view/process_keys.py", "signal") in _where("ask_signal")
