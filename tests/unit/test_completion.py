"""Shell completion, run in the real shells: the script `gputui completion SHELL` prints
completes commands, options, --demo's scenarios and option choices. bash always; zsh and
fish where installed (CI installs them: absent there is a failure, not a skip)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gputui.cli.completion import script
from gputui.cli.parser import COMMANDS, build_parser
from tests.servers import needed_binary

CASES = [  # (words typed, the word being completed, what must be offered)
    (["gputui", ""], "", set(COMMANDS)),
    (["gputui", "--de"], "--de", {"--demo"}),
    (["gputui", "--demo", "th"], "th", {"thermal"}),
    (["gputui", "snapshot", "--for"], "--for", {"--format"}),
    (["gputui", "snapshot", "--format", ""], "", {"json", "markdown"}),
    (["gputui", "report", "--format", ""], "", {"html", "md"}),  # one flag, two meanings
    (["gputui", "doctor", "--d"], "--d", {"--demo", "--duration"}),
    (["gputui", "completion", "f"], "f", {"fish"}),
]


def _bash_like(shell: str, words: list[str], setup: str = "") -> set[str]:
    text = script(shell, build_parser())
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"{setup}\n{text}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        'COMPREPLY=(); _gputui; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(
        [needed_binary(shell), "-c", program],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return {line for line in out.stdout.splitlines() if line}


@pytest.mark.parametrize(("words", "current", "offered"), CASES)
def test_bash_completes_commands_options_and_choices(
    words: list[str], current: str, offered: set[str]
) -> None:
    got = _bash_like("bash", words)
    assert offered <= got and all(w.startswith(current) for w in got), got


def test_zsh_completes_through_bashcompinit() -> None:
    for words, _current, offered in CASES[:3]:
        # bashcompinit's wrapper sets ksharrays (0-based arrays) before calling a bash function
        got = _bash_like("zsh", words, setup="setopt ksharrays")
        assert offered <= got, (words, got)


def test_zsh_loads_it_in_a_shell_without_compinit(tmp_path: Path) -> None:
    """The README's "the same in ~/.zshrc": a bare zsh has no compdef, and bashcompinit's
    `complete` failed there ("command not found: compdef"); the script loads compinit."""
    text = script("zsh", build_parser())
    env = {**os.environ, "HOME": str(tmp_path), "ZDOTDIR": str(tmp_path)}
    out = subprocess.run(
        [needed_binary("zsh"), "-f", "-c", f"{text}\nprint -r -- ${{_comps[gputui]}}"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0 and not out.stderr, out.stderr
    assert out.stdout.strip(), "no completion registered for gputui"


def test_fish_completes_commands_options_and_choices() -> None:
    fish = needed_binary("fish")
    text = script("fish", build_parser())
    for line, offered in (
        ("gputui ", set(COMMANDS)),
        ("gputui --demo ", {"thermal", "numa", "mix"}),
        ("gputui snapshot --format ", {"json", "markdown"}),
        ("gputui doctor --dur", {"--duration"}),
    ):
        program = f"{text}\ncomplete -C {line!r}"
        out = subprocess.run(
            [fish, "--no-config", "-c", program], capture_output=True, text=True, timeout=30
        )
        got = {row.split("\t")[0] for row in out.stdout.splitlines()}
        assert offered <= got, (line, got, out.stderr)


def test_every_command_and_scenario_is_in_every_script() -> None:
    from gputui.sources.simulated import SCENARIOS

    for shell in ("bash", "zsh", "fish"):
        text = script(shell, build_parser())
        assert all(c in text for c in COMMANDS) and all(s in text for s in SCENARIOS)


@pytest.mark.parametrize(
    ("words", "current", "offered"),
    [
        (["gputui", "--on"], "--on", {"--only"}),
        (["gputui", "--rea"], "--rea", {"--readonly"}),
        (["gputui", "--th"], "--th", {"--theme"}),
        (["gputui", "--theme", ""], "", {"dark", "light"}),
        (["gputui", "snapshot", "--on"], "--on", {"--only"}),
        (["gputui", "record", "--on"], "--on", {"--only"}),
    ],
)
def test_the_selection_readonly_and_theme_options_complete(
    words: list[str], current: str, offered: set[str]
) -> None:
    got = _bash_like("bash", words)
    assert offered <= got and all(w.startswith(current) for w in got), got
    assert offered <= _bash_like("zsh", words, setup="setopt ksharrays")
    text = script("fish", build_parser())
    assert all(f"-l {flag.lstrip('-')}" in text for flag in ("only", "readonly", "theme"))
