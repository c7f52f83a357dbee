"""A Hugging Face ``TrainerCallback``: gputui's readings, findings and step line in the
Trainer's own logs (TensorBoard, W&B, MLflow... whatever ``report_to`` names), the run's
report in ``output_dir`` beside the checkpoints at the end of training. Needs
``gputui[transformers]``.

    trainer = Trainer(model=model, args=args, train_dataset=data)
    attach(trainer)
    trainer.train()

``attach`` puts the callback ahead of the reporting callbacks, which then log its numbers
with the Trainer's own (a callback passed in ``callbacks=`` runs after them: they would
not see it).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from gputui.api.metrics import Log
from gputui.api.watch import Watch
from gputui.integrations.common import Options, finish, make_watch

__all__ = ["GpuTuiCallback", "attach"]
LOG = logging.getLogger("gputui")


class GpuTuiCallback(TrainerCallback):
    """gputui beside the Trainer's steps. Takes ``gputui.integrations.common.Options``'
    fields as keywords: ``gpus="node"`` (the node's first process watches every GPU;
    ``"own"``: each process its own), ``interval_s``, ``history_s``, ``report``. It logs
    when the Trainer logs (``logging_steps``)."""

    def __init__(self, **options: Any) -> None:
        self.options = Options(**options)
        self.watch: Watch | None = None
        #: where the run's report was written, once training ended
        self.report_path: Path | None = None
        self._handler: Any = None

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if self._handler is None:
            LOG.warning(
                "gputui: use gputui.integrations.transformers.attach(trainer) so that "
                "the Trainer's reporters log gputui's numbers"
            )
        if self.watch is None:
            self.watch = make_watch(self.options, int(args.local_process_index)).start()

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        if self.watch is not None:
            self.watch.step()

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        watch = self.watch
        if watch is None or logs is None or "train_runtime" in logs:
            return
        log = watch.log()
        logs.update(log.scalars)  # the reporters after this callback log them
        if state.is_world_process_zero:
            self._text(log, state.global_step)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        watch, self.watch = self.watch, None
        if watch is None:
            return
        where = Path(args.output_dir) if self.options.report and args.output_dir else None
        self.report_path = finish(watch, where, int(args.process_index))
        if self.report_path is not None:
            _artifact(args, self.report_path)

    def _text(self, log: Log, step: int) -> None:
        """The step line and new findings as TensorBoard text, where it reports."""
        for callback in getattr(self._handler, "callbacks", ()):
            writer = getattr(callback, "tb_writer", None)
            if writer is None:
                continue
            writer.add_text("gputui/steps", log.steps.text(), step)
            if log.new_findings:
                text = "\n\n".join(f.text() for f in log.new_findings)
                writer.add_text("gputui/findings", text, step)


def attach(trainer: Trainer, **options: Any) -> GpuTuiCallback:
    """A ``GpuTuiCallback`` with ``options``, put ahead of ``trainer``'s reporting
    callbacks (after its flow control, which decides when to log)."""
    callback = GpuTuiCallback(**options)
    handler = trainer.callback_handler
    callback._handler = handler
    handler.callbacks.insert(min(1, len(handler.callbacks)), callback)
    return callback


def _artifact(args: TrainingArguments, path: Path) -> None:
    """The report as a file of the run where a reporter keeps files (MLflow, W&B)."""
    report_to = set(args.report_to or ())
    mlflow = sys.modules.get("mlflow")
    if "mlflow" in report_to and mlflow is not None and mlflow.active_run() is not None:
        mlflow.log_artifact(str(path))
    wandb = sys.modules.get("wandb")
    if "wandb" in report_to and wandb is not None and wandb.run is not None:
        wandb.save(str(path), base_path=str(path.parent))
