"""A real Hugging Face ``Trainer.train`` on the CPU with gputui's callback, over the NVML
test double, one GPU throttling (heat) through the middle of the run: TensorBoard's event
files (the Trainer's own reporter) hold gputui's readings, the finding and the step line
that names the GPU; the report lies in ``output_dir`` beside the checkpoint. Skipped
without transformers (failed in CI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.training_kit import Throttle, event_scalars, event_texts, need


def _train(tmp_path: Path, throttle: Throttle) -> tuple[Any, Any]:
    torch = need("torch")
    transformers = need("transformers")
    need("accelerate")
    from gputui.integrations.transformers import attach

    class Tiny(torch.nn.Module):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def forward(self, x: Any, labels: Any) -> Any:
            throttle.step()
            return {"loss": torch.nn.functional.mse_loss(self.layer(x), labels)}

    data = [{"x": torch.randn(4), "labels": torch.randn(1)} for _ in range(320)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=320,
        per_device_train_batch_size=1,
        logging_steps=20,
        save_steps=320,
        report_to=["tensorboard"],
        use_cpu=True,
        remove_unused_columns=False,
        disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=data)
    callback = attach(trainer, **throttle.options)
    trainer.train()
    return trainer, callback


def test_train_logs_readings_finding_and_the_throttled_gpu_for_slow_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    throttle = Throttle(first=100, last=260)
    throttle.install(monkeypatch)
    _trainer, callback = _train(tmp_path, throttle)

    # the Trainer's TensorBoard reporter files a training log's numbers under "train/"
    scalars = {t.removeprefix("train/"): v for t, v in event_scalars(tmp_path / "out").items()}
    assert len(scalars["gputui/gpu0/util_pct"]) >= 10
    assert "gputui/gpu1/sm_clock_pct" in scalars and "gputui/gpu1/temp_margin_c" in scalars
    assert max(v for _s, v in scalars["gputui/gpu1/throttled_s"]) > 0
    assert max(v for _s, v in scalars["gputui/gpu0/throttled_s"]) == 0
    assert max(v for _s, v in scalars["gputui/finding/thermal-throttle/gpu1"]) == 1
    assert max(v for _s, v in scalars["gputui/findings/critical"]) >= 1
    assert max(v for _s, v in scalars["gputui/slow/thermal-throttle/gpu1/share_pct"]) > 80
    assert not any(t.startswith("gputui/slow/") and "/gpu0/" in t for t in scalars)
    # the Trainer's own numbers beside them, in the same event files
    assert "loss" in scalars

    texts = event_texts(tmp_path / "out")
    assert any("thermal-throttle on GPU 1" in t for t in texts["gputui/steps"])
    assert any("GPU 1: critical: Thermal throttling" in t for t in texts["gputui/findings"])

    report = tmp_path / "out" / "gputui-report.html"
    assert callback.report_path == report and "Thermal throttling" in report.read_text()
    assert (tmp_path / "out" / "checkpoint-320").is_dir()
