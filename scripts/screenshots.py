"""Regenerate screenshots/: the default demo mix and each scenario, at 160x50 and 80x24.

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


async def shoot(out: Path) -> list[Path]:
    written = []
    for scenario in (MIX, *SCENARIOS):
        for width, height in SIZES:
            gpus = 8 if scenario == MIX and width >= 120 else 4
            app = make_demo_app(scenario, gpus)
            async with app.run_test(size=(width, height)) as pilot:
                await pilot.pause()
                await pilot.pause()
                name = f"{scenario}-{width}x{height}.svg"
                app.save_screenshot(filename=name, path=str(out))
            written.append(out / name)
    app = make_demo_app(MIX, 8)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("o")
        await pilot.pause()
        app.save_screenshot(filename="overview-160x50.svg", path=str(out))
    written.append(out / "overview-160x50.svg")
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
