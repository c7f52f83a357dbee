"""Screenshots as files: an SVG that renders where it is opened, with nothing to fetch."""

from __future__ import annotations

import re

# Textual's SVG template names a web font by URL; an air-gapped cluster cannot load it,
# and a file that fetches from the network when opened is a leak of its own.
_REMOTE_FONT = re.compile(r",?\s*url\(\s*[\"']?https?://[^)]*\)\s*format\([^)]*\)")


def local_fonts_only(svg: str) -> str:
    """``svg`` with every remote font source removed; local fonts and the monospace
    fallback stay, so the text keeps its columns."""
    return _REMOTE_FONT.sub("", svg)
