"""Rewrite CONTRIBUTING.md's test commands, with their counts and times, from a run.

Usage: python scripts/contributing_figures.py [--check] [--no-time] [CONTRIBUTING]

The block sits between ``<!-- tiers:start -->`` and ``<!-- tiers:end -->``. Each tier's
tests are counted by pytest's collection (``--collect-only -q``) and, unless --no-time,
timed by running it (``-n 2``, as CI does) on this machine, whose CPUs and date the block
names. With --check nothing is run or written: the exit status is 1 when the counts in the
file are not what collection finds now (the times are kept from the last full run).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- tiers:start -->"
END = "<!-- tiers:end -->"
COUNTED = re.compile(r"^(\d+)(?:/\d+)? tests? collected", re.MULTILINE)
PER_FILE = re.compile(r"^\S+\.py: (\d+)$", re.MULTILINE)
SHOWN = re.compile(r"# (.*?): ([\d,]+) tests(?:, about ([^)\n]*?))?(?:\n|$)")


@dataclass(frozen=True)
class Tier:
    what: str
    args: tuple[str, ...]

    def command(self, parallel: bool) -> list[str]:
        return [sys.executable, "-m", "pytest", *(["-n", "2"] if parallel else []), *self.args]


TIERS = (
    Tier("everything", ()),
    Tier("the unit tier", ("tests/unit",)),
    Tier("the slow tier (real servers, apps, ptys)", ("-m", "slow")),
)


def count(tier: Tier) -> int:
    """The tests pytest collects for ``tier`` (deselected ones not counted)."""
    out = subprocess.run(
        [*tier.command(parallel=False), "--collect-only", "-q", "-p", "no:randomly"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    per_file = [int(n) for n in PER_FILE.findall(out)]  # the config's -q made it -qq
    if per_file:
        return sum(per_file)
    found = COUNTED.search(out)
    if found is None:
        raise RuntimeError(f"pytest collected nothing for {tier.what}:\n{out[-2000:]}")
    return int(found.group(1))


def duration(tier: Tier) -> str:
    """How long the tier takes with two workers, as a reader would say it."""
    started = time.monotonic()
    subprocess.run([*tier.command(parallel=True), "-q"], capture_output=True, cwd=ROOT, check=True)
    seconds = time.monotonic() - started
    minutes, rest = divmod(round(seconds / 5) * 5, 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def block(counts: list[int], times: list[str | None], note: str) -> str:
    lines = ["```sh"]
    for tier, number, took in zip(TIERS, counts, times, strict=True):
        command = " ".join(["-m", "pytest", "-n", "2", *tier.args])
        figure = f"{number:,} tests" + (f", about {took}" if took else "")
        lines.append(f"{'.venv/bin/python ' + command:<52}# {tier.what}: {figure}")
    lines += [
        f"{'.venv/bin/python -m pytest -m gpu':<52}# on a machine with a real GPU",
        f"{'.venv/bin/lint-imports':<52}# the layer contracts",
        "```",
        "",
        note,
    ]
    return "\n".join(lines)


def shown(text: str) -> tuple[list[int], list[str | None], str]:
    """The counts, times and note the block in ``text`` holds now."""
    inner = text[text.index(START) + len(START) : text.index(END)]
    found = {m.group(1): m for m in SHOWN.finditer(inner)}
    counts = [
        int(found[t.what].group(2).replace(",", "")) if t.what in found else -1 for t in TIERS
    ]
    times = [found[t.what].group(3) if t.what in found else None for t in TIERS]
    note = inner.split("```", 2)[-1].strip()
    return counts, times, note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=ROOT / "CONTRIBUTING.md")
    parser.add_argument("--check", action="store_true", help="only compare the counts")
    parser.add_argument("--no-time", action="store_true", help="count, keep the old times")
    args = parser.parse_args(argv)
    text = args.path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        print(f"{args.path}: no {START} ... {END} markers", file=sys.stderr)
        return 2
    old_counts, old_times, old_note = shown(text)
    counts = [count(tier) for tier in TIERS]
    if args.check:
        if counts == old_counts:
            print(f"{args.path}: the test counts are up to date ({counts[0]:,} tests)")
            return 0
        print(f"{args.path}: counts {old_counts}, collected {counts}: run {__file__}")
        return 1
    if args.no_time:
        times, note = old_times, old_note
    else:
        times = [duration(tier) for tier in TIERS]
        day = datetime.date.today().isoformat()
        note = (
            f"(Timed by `scripts/contributing_figures.py` on {os.cpu_count()} CPUs, {day}, "
            f"Python {sys.version.split()[0]}, with the dependencies of this venv.)"
        )
    new = text[: text.index(START) + len(START)] + "\n" + block(counts, times, note) + "\n"
    new += text[text.index(END) :]
    args.path.write_text(new, encoding="utf-8")
    print(f"{args.path}: {', '.join(f'{c:,}' for c in counts)} tests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
