"""The Prometheus text exposition, read for what gputui needs: fast, bounded, strict.

A dcgm-exporter page is a few hundred lines that repeat the same label sets tick after
tick (every field of a GPU carries the GPU's labels). The general parser
(prometheus_client's) builds metric families and samples for every line; here a line is
split once, its label block is parsed once per distinct text (then found in a cache the
caller keeps across ticks), and only the name, the labels and the value come out.
Anything that is not the text format (HTML, JSON, a truncated line) is refused with the
line number, never half-read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: label blocks remembered per cache (a node's page has a few hundred distinct ones)
MAX_CACHED_BLOCKS = 4096
MAX_LINE_CHARS = 64 * 1024  # a longer line is no exporter's

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\.)*)"[ \t]*(,|$)')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", "\\": "\\", '"': '"'}

LabelCache = dict[str, dict[str, str]]


class ExpositionError(ValueError):
    """The text is not a Prometheus exposition; the message says where."""


def samples(
    text: str, cache: LabelCache | None = None
) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) for each sample line, in order. ``cache`` maps a label block's
    text to its labels: pass the same dict for the same page tick after tick. The label
    dicts it yields are shared with the cache: never change them."""
    blocks: LabelCache = {} if cache is None else cache
    if len(blocks) > MAX_CACHED_BLOCKS:
        blocks.clear()
    empty: dict[str, str] = {}
    lines = text.split("\n")
    # Every line of the format ends with a line feed: one without is a page cut short (a
    # proxy's limit, a dropped connection), and its value may be cut inside its digits
    # ("2.0356608502" of "2.0356608502e+09"): left out, never read as a smaller number
    lines.pop()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line[0] == "#":
            continue
        if len(line) > MAX_LINE_CHARS:
            raise ExpositionError(f"line {number} is longer than {MAX_LINE_CHARS} characters")
        brace = line.find("{")
        if brace >= 0:
            close = line.rfind("}")
            if close < brace:
                raise ExpositionError(f"line {number}: a label block without its end")
            name = line[:brace].rstrip()
            block = line[brace + 1 : close]
            labels = blocks.get(block)
            if labels is None:
                labels = _labels(block, number)
                if len(blocks) < MAX_CACHED_BLOCKS:
                    blocks[block] = labels
            rest = line[close + 1 :]
        else:
            parts = line.split(None, 1)
            name, rest, labels = parts[0], parts[1] if len(parts) > 1 else "", empty
        if _NAME.fullmatch(name) is None:
            raise ExpositionError(f"line {number}: not a metric name")
        yield name, labels, _value(rest, number)


def _labels(block: str, number: int) -> dict[str, str]:
    out: dict[str, str] = {}
    at = 0
    end = len(block.rstrip())
    while at < end:
        found = _LABEL.match(block, at)
        if found is None or (found.group(3) == "" and found.end() < end):
            raise ExpositionError(f'line {number}: a label that is not name="value"')
        key, value = found.group(1), found.group(2)
        if "\\" in value:
            value = _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), "\\" + m.group(1)), value)
        if key in out:
            raise ExpositionError(f"line {number}: label {key} given twice")
        out[key] = value
        at = found.end()
        if found.group(3) == "":
            break
    return out


def _value(rest: str, number: int) -> float:
    """The sample's value; an optional timestamp after it is allowed and not used."""
    parts = rest.split()
    if not 1 <= len(parts) <= 2:
        raise ExpositionError(f"line {number}: not 'value [timestamp]' after the labels")
    try:
        value = float(parts[0])
        if len(parts) == 2:
            float(parts[1])
    except ValueError as exc:
        raise ExpositionError(f"line {number}: not a number") from exc
    if "_" in parts[0]:  # Python reads 1_000; the format does not
        raise ExpositionError(f"line {number}: not a number")
    return value
