"""Completion inserts a file name as the shell must read it back (issue 52): bash's
completion put names on the line unquoted (`complete` without `-o filenames`), so a file
named ``$(touch${IFS}PWNED).jsonl`` in a shared results folder ran ``touch`` when the
completed line was entered, and a name with a space became two candidates.

Each shell runs interactively in a pty with `gputui completion SHELL` loaded and
``gputui`` a function that writes down the arguments it gets; the test types
``gputui replay DIR/``, Tab and Enter in folders that each hold one hostile name. zsh and
fish where installed (CI installs them: absent there is a failure, not a skip)."""

from __future__ import annotations

import os
import pty
import select
import time
from pathlib import Path

import pytest

from gputui.cli.completion import script
from gputui.cli.parser import build_parser
from tests.servers import needed_binary

#: names of the class of attack: command substitution both ways, a command separator, a
#: variable, a glob, quotes, a space, a newline-free backslash
HOSTILE = [
    "$(touch${IFS}PWNED).jsonl",
    "`touch${IFS}PWNED`.jsonl",
    ";touch PWNED;.jsonl",
    "a&&touch PWNED.jsonl",
    "$HOME.jsonl",
    "*.jsonl",
    'it\'s "quoted".jsonl',
    "my run.jsonl",
    "back\\slash.jsonl",
]

RC = {
    "bash": "PS1='READY> '\ngputui() {{ printf '%s\\0' \"$@\" > {args}; }}\nsource {script}\n",
    "zsh": "PS1='READY> '\ngputui() {{ printf '%s\\0' \"$@\" > {args}; }}\nsource {script}\n",
    "fish": (
        "function fish_prompt; echo -n 'READY> '; end\n"
        "function gputui; printf '%s\\0' $argv > {args}; end\n"
        "source {script}\n"
    ),
}


def _argv(shell: str, path: str, rc: Path) -> list[str]:
    if shell == "bash":
        return [path, "--noprofile", "--rcfile", str(rc), "-i"]
    if shell == "zsh":  # its rc is $ZDOTDIR/.zshrc, the system's left out
        (rc.parent / "home" / ".zshrc").write_text(rc.read_text())
        return [path, "--no-globalrcs", "-i"]
    return [path, "--no-config", "-i", "-C", f"source {rc}"]


class Pty:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the shell
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.seen = b""

    def read_until(self, marker: bytes, seconds: float = 10.0) -> bytes:
        deadline = time.monotonic() + seconds
        while marker not in self.seen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:
                    break
        found = marker in self.seen
        self.seen = self.seen[self.seen.index(marker) + len(marker) :] if found else b""
        return b"" if not found else marker

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def close(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_inserts_hostile_file_names_quoted_and_whole(tmp_path: Path, shell: str) -> None:
    path = needed_binary(shell)
    home = tmp_path / "home"
    results = tmp_path / "results"
    home.mkdir()
    args = tmp_path / "args"
    completion = tmp_path / f"gputui.{shell}"
    completion.write_text(script(shell, build_parser()))
    rc = tmp_path / "rc"
    rc.write_text(RC[shell].format(args=args, script=completion))
    for k, name in enumerate(HOSTILE):
        (results / f"d{k}").mkdir(parents=True)
        (results / f"d{k}" / name).write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TERM": "xterm", "ZDOTDIR": str(home)}
    term = Pty(_argv(shell, path, rc), results, env)
    try:
        assert term.read_until(b"READY> ", 15.0), term.seen
        for k, name in enumerate(HOSTILE):
            # the file a command takes, and the file an option takes
            words = ["replay"] if k % 2 else ["report", "-o"]
            args.unlink(missing_ok=True)
            term.type(f"gputui {' '.join(words)} d{k}/\t")
            time.sleep(0.5)  # the completion inserts the name
            term.type("\r")
            deadline = time.monotonic() + 10
            while not args.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert term.read_until(b"READY> "), (name, term.seen)
            got = args.read_bytes().split(b"\0")[:-1] if args.exists() else None
            assert got == [*(w.encode() for w in words), f"d{k}/{name}".encode()], (shell, got)
    finally:
        term.close()
    assert not list(tmp_path.rglob("PWNED*")), "a file name ran a command"
