"""A real Lightning ``Trainer.fit`` on the CPU with gputui's callback, over the NVML test
double, one GPU throttling (heat) through the middle of the run: the CSV and TensorBoard
loggers' files hold gputui's readings, the finding and the step line that names the GPU;
the report lies beside the checkpoints. Skipped without Lightning (failed in CI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.training_kit import Throttle, csv_rows, event_scalars, event_texts, need


def _fit(tmp_path: Path, throttle: Throttle, **options: Any) -> Any:
    torch = need("torch")
    pl = need("lightning.pytorch")
    from gputui.integrations.lightning import GpuTuiCallback

    class Tiny(pl.LightningModule):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: Any, batch_idx: int) -> Any:
            throttle.step()
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.TensorDataset(torch.randn(320, 4), torch.randn(320, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=1)
    loggers = [
        pl.loggers.CSVLogger(tmp_path / "csv", name="run"),
        pl.loggers.TensorBoardLogger(tmp_path / "tb", name="run"),
    ]
    callback = GpuTuiCallback(log_every=20, **throttle.options, **options)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=1,
        logger=loggers,
        callbacks=[callback],
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Tiny(), loader)
    return trainer, callback


def test_fit_logs_readings_finding_and_the_throttled_gpu_for_slow_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    throttle = Throttle(first=100, last=260)
    throttle.install(monkeypatch)
    trainer, callback = _fit(tmp_path, throttle)

    rows = csv_rows(next((tmp_path / "csv").rglob("metrics.csv")))
    logged = [r for r in rows if r.get("gputui/step_s")]
    assert len(logged) >= 10
    assert all(r["gputui/gpu0/util_pct"] and r["gputui/gpu1/sm_clock_pct"] for r in logged)
    throttled = [r for r in logged if float(r["gputui/gpu1/throttled_s"] or 0) > 0]
    assert throttled and all(float(r["gputui/gpu0/throttled_s"]) == 0 for r in logged)
    # the advisor's verdict: GPU 1 thermal throttling, in the CSV as its own column
    assert any(r.get("gputui/finding/thermal-throttle/gpu1") == "1.0" for r in logged)
    assert any(float(r["gputui/findings/critical"] or 0) >= 1 for r in logged)
    # the step line: the slow steps went with GPU 1's throttling, most of the slowdown
    shares = [
        float(r["gputui/slow/thermal-throttle/gpu1/share_pct"])
        for r in logged
        if r.get("gputui/slow/thermal-throttle/gpu1/share_pct")
    ]
    assert shares and max(shares) > 80
    assert not any(k.startswith("gputui/slow/") and "gpu0" in k for k in rows[0])

    scalars = event_scalars(tmp_path / "tb")
    assert "gputui/gpu1/temp_c" in scalars and "gputui/finding/thermal-throttle/gpu1" in scalars
    assert max(v for _s, v in scalars["gputui/slow/thermal-throttle/gpu1/share_pct"]) > 80
    texts = event_texts(tmp_path / "tb")
    assert any("thermal-throttle on GPU 1" in t for t in texts["gputui/steps"])
    assert any("GPU 1: critical: Thermal throttling" in t for t in texts["gputui/findings"])

    report = Path(trainer.checkpoint_callback.dirpath) / "gputui-report.html"
    assert callback.report_path == report and report.exists()
    assert "Thermal throttling" in report.read_text()


def test_a_rank_that_leaves_the_node_to_the_first_watches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gpus="node"`` on local rank 1: no GPU read, no report, the fit unharmed."""
    throttle = Throttle(first=0, last=0)
    throttle.install(monkeypatch)
    monkeypatch.setenv("LOCAL_RANK", "1")
    need("lightning.pytorch")
    from lightning.pytorch import Trainer

    monkeypatch.setattr(Trainer, "local_rank", property(lambda self: 1))
    _trainer, callback = _fit(tmp_path, throttle)
    assert callback.report_path is None
