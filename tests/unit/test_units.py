"""Numbers in words: never a glued unknown ("Genn/a xn/a", "1980/n/a")."""

from __future__ import annotations

from gputui.core.config import Thresholds
from gputui.core.judgement import Judgement
from gputui.core.model import DeviceInfo, Frame, GpuSample
from gputui.core.units import NA, fmt_link, fmt_of
from gputui.sampling.history import History
from gputui.view.cells import plain_lines
from gputui.view.detail import View, detail
from gputui.view.overview import overview
from gputui.view.timeline import Timeline


def test_a_link_says_what_is_known_and_only_that() -> None:
    assert fmt_link(5, 16) == "Gen5 x16"
    assert fmt_link(5, None) == "Gen5" and fmt_link(None, 8) == "x8"
    assert fmt_link(None, None) == NA


def test_a_value_against_its_limit_says_what_is_known() -> None:
    assert fmt_of(1380, 1980, "MHz") == "1380/1980 MHz"
    assert fmt_of(1380, None, "MHz") == "1380 MHz"
    assert fmt_of(None, 1980, "MHz") == NA


def test_a_remote_gpu_without_link_or_limits_shows_no_glued_unknowns() -> None:
    """A dcgm-exporter page with the default counters: no PCIe generation, no limits."""
    device = DeviceInfo(index=0, name="NVIDIA A100-SXM4-80GB", node="node-7")
    sample = GpuSample(index=0, util_gpu=90.0, pcie_width=16, power_w=300.0, sm_clock_mhz=1400)
    frame = Frame(time=1.0, gpus=(sample,))
    history = History(10)
    history.add(frame)
    t = Thresholds()
    judgement = Judgement(seen_s=0.0, needed_s=10.0)
    texts = [
        *plain_lines(detail(frame, device, history, Timeline(), View(60, 1.0, 120, 30), t), 120),
        *plain_lines(
            overview(frame, (device,), (), history, Timeline(), judgement, 0, 120, 30, t, 60, 1.0),
            120,
        ),
    ]
    joined = "\n".join(texts)
    assert "n/a x" not in joined and "Genn/a" not in joined and "/n/a" not in joined


def test_doctor_shows_no_glued_unknowns_for_a_remote_gpu() -> None:
    import io

    from rich.console import Console

    from gputui.advisor import make_monitor
    from gputui.core.config import Config
    from gputui.core.model import SourceInfo
    from gputui.core.names import SourceKind
    from gputui.exporters.doctor import render_report

    device = DeviceInfo(index=0, name="NVIDIA A100-SXM4-80GB", node="node-7")
    monitor = make_monitor((device,), Config(), SourceInfo("REMOTE", SourceKind.REMOTE))
    monitor.ingest(Frame(time=1.0, gpus=(GpuSample(index=0, sm_clock_mhz=1400),)))
    out = io.StringIO()
    render_report(monitor, Console(file=out, width=160))
    text = out.getvalue()
    assert "1400" in text and "/n/a" not in text and "Genn/a" not in text and "xn/a" not in text
