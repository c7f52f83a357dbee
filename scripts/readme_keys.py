"""Rewrite README.md's key table from the bindings (gputui/ui/keys.py), in place.

Usage: python scripts/readme_keys.py [--check] [README]

The table sits between the marker comments ``<!-- keys:start -->`` and
``<!-- keys:end -->`` under "## Keys"; everything else in the file is left as it is.
With --check nothing is written: the exit status is 1 when the table is out of date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gputui.ui.keys import markdown_key_table

START = "<!-- keys:start -->"
END = "<!-- keys:end -->"
README = Path(__file__).resolve().parents[1] / "README.md"


def splice(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    start = readme.find(START)
    end = readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README has no {START} ... {END} markers, in that order")
    head = readme[: start + len(START)]
    return f"{head}\n\n{table.strip()}\n\n{readme[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", nargs="?", type=Path, default=README)
    parser.add_argument("--check", action="store_true", help="only report an outdated table")
    args = parser.parse_args(argv)
    path: Path = args.readme
    old = path.read_text(encoding="utf-8")
    try:
        new = splice(old, markdown_key_table())
    except ValueError as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    if new == old:
        print(f"{path}: the key table is up to date")
        return 0
    if args.check:
        print(f"{path}: the key table is out of date: run python scripts/readme_keys.py")
        return 1
    path.write_text(new, encoding="utf-8")
    print(f"{path}: key table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
