"""What in a remedy is to be typed: commands and code, as Markdown code spans that copy as
they read (``sudo nvidia-smi -i 0 -pl 700``, ``DataLoader(num_workers=N)``), never escaped
and never broken across lines; the rest stays prose.

A command is recognised where a remedy gives one: in backticks, or a known command word
after ": ", "; " or "(" up to the next ";", " (", ")" or the end. Code is a call with a
dotted, underscored or capitalised name (``torch.cuda.memory_summary()``), an assignment
(``pin_memory=True``) or an underscored identifier (``num_workers``)."""

from __future__ import annotations

import re
from typing import Final

#: commands remedies tell people to run
COMMANDS: Final = frozenset(
    {
        "sudo",
        "nvidia-smi",
        "nvidia-bug-report.sh",
        "dcgmi",
        "numactl",
        "taskset",
        "srun",
        "systemctl",
        "journalctl",
        "dmesg",
        "lspci",
        "setpci",
        "sysctl",
        "ulimit",
        "export",
        "echo",
        "cat",
        "mount",
        "docker",
        "cpupower",
        "modprobe",
        "pip",
        "python",
        "python3",
        "torchrun",
        "gputui",
    }
)
_TICKS = re.compile(r"`([^`]+)`")
_COMMAND = re.compile(
    r"(?:(?<=^)|(?<=: )|(?<=; )|(?<=\())(?P<cmd>(?:" + "|".join(re.escape(c) for c in COMMANDS)
    + r")(?= |$)[^;()]*?)(?=;|\s\(|\)|\.$|$)"
)  # fmt: skip
_CODE = re.compile(
    r"(?:[A-Za-z_]*[._][\w.]*|[A-Z]\w*)\([^()]*\)"  # calls: f.g(), .item(), DataLoader(...)
    r"|\b[A-Za-z_][\w.]*=[\w.]+"  # assignments: pin_memory=True
    r"|\b[a-z]+_[\w]+\b"  # underscored names: num_workers
)


def pieces(text: str) -> list[tuple[str, bool]]:
    """``text`` as (piece, is_code) in order; pieces join back to the text without the
    backticks it had."""
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(_TICKS.split(text)):
        if i % 2:
            out.append((part, True))
        elif part:
            out += _commands(part)
    return [(p, code) for p, code in out if p]


def _commands(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    at = 0
    for m in _COMMAND.finditer(text):
        out += _code(text[at : m.start("cmd")])
        out.append((m["cmd"].rstrip(), True))
        at = m.start("cmd") + len(m["cmd"].rstrip())
    return out + _code(text[at:])


def _code(text: str) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    at = 0
    for m in _CODE.finditer(text):
        token = m[0]
        out.append((text[at : m.start()], False))
        out.append((token, True))
        at = m.end()
    out.append((text[at:], False))
    return out


def code_span(code: str) -> str:
    """A Markdown code span of ``code``: enough backticks around it that none inside ends
    it, spaces where the content starts or ends with a backtick."""
    fence = "`"
    while fence in code:
        fence += "`"
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{fence}{pad}{code}{pad}{fence}"
