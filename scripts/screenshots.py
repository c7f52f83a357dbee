"""Regenerate screenshots/: what `gputui --demo` shows first, the default demo mix at the
sizes users run at (160x50, 120x40 and 80x24 with 8 GPUs, 100x30 with 16), each scenario at
160x50 and 80x24, the overview, every GPU process, one process looked into, the ASCII
fallback, the light theme and two processes tagged.

Usage: python scripts/screenshots.py [OUTPUT_DIR]

Every screen comes from the app factory the CLI uses, on a fixed clock and seed, so the
pictures change only when the app does. SVG always; PNG too when cairosvg is installed
(pip install cairosvg; it needs a monospace font such as DejaVu Sans Mono).
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

from gputui.launch import make_demo_app
from gputui.sources.simulated import MIX, SCENARIOS

SIZES = ((160, 50), (80, 24))
#: the default mix: (columns, rows, GPUs)
MIX_SIZES = ((160, 50, 8), (120, 40, 8), (80, 24, 8), (100, 30, 16))


def _png(svg_path: Path) -> bool:
    try:
        import cairosvg  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return False
    svg = svg_path.read_text()
    # Textual's SVG names a web font; use one installed here.
    svg = re.sub(r"font-family:\s*[^;\"]+", "font-family: DejaVu Sans Mono", svg)
    cairosvg.svg2png(
        bytestring=svg.encode(), write_to=str(svg_path.with_suffix(".png")), output_width=1400
    )
    return True


async def _shot(
    out: Path,
    name: str,
    scenario: str | None,
    gpus: int,
    size: tuple[int, int],
    *keys: str,
    theme: str = "dark",
) -> Path:
    app = make_demo_app(scenario, gpus, ascii=name.startswith("ascii"), theme=theme)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        app.save_screenshot(filename=name, path=str(out))
    return out / name


async def shoot(out: Path) -> list[Path]:
    # what `gputui --demo` shows first: the default mix on 4 GPUs, two minutes in
    written = [await _shot(out, "demo-160x50.svg", MIX, 4, (160, 50))]
    written += [await _shot(out, f"mix-{w}x{h}.svg", MIX, gpus, (w, h)) for w, h, gpus in MIX_SIZES]
    for scenario in SCENARIOS:
        for width, height in SIZES:
            name = f"{scenario}-{width}x{height}.svg"
            written.append(await _shot(out, name, scenario, 4, (width, height)))
    written.append(await _shot(out, "overview-160x50.svg", MIX, 8, (160, 50), "o"))
    written.append(await _shot(out, "processes-120x40.svg", MIX, 8, (120, 40), "a"))
    # every GPU's processes on the main screen, a job's ranks under torchrun, one selected
    written.append(await _shot(out, "all-gpus-160x50.svg", MIX, 8, (160, 50), "v", "down"))
    written.append(await _shot(out, "process-160x50.svg", MIX, 8, (160, 50), "down", "i"))
    written.append(await _shot(out, "ascii-80x24.svg", MIX, 8, (80, 24)))
    written.append(await _shot(out, "light-120x40.svg", MIX, 8, (120, 40), theme="light"))
    tags = ("v", "down", "space", "down", "down", "space")  # two processes tagged
    written.append(await _shot(out, "tagged-160x50.svg", MIX, 8, (160, 50), *tags))
    return written


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    written = asyncio.run(shoot(out))
    pngs = sum(_png(path) for path in written)
    print(f"{len(written)} SVG and {pngs} PNG screenshots in {out}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
