"""A Lightning ``Callback``: gputui's readings, findings and step line through the
Trainer's own loggers (TensorBoard, CSV, W&B, MLflow...), the run's report beside the
checkpoints at the end of fit. Needs ``gputui[lightning]``.

    from lightning.pytorch import Trainer
    from gputui.integrations.lightning import GpuTuiCallback

    trainer = Trainer(callbacks=[GpuTuiCallback()])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import MLFlowLogger, WandbLogger

from gputui.api.metrics import Log
from gputui.api.watch import Watch
from gputui.integrations.common import Options, finish, make_watch

__all__ = ["GpuTuiCallback"]


class GpuTuiCallback(Callback):
    """gputui beside the Trainer's steps. Takes ``gputui.integrations.common.Options``'
    fields as keywords: ``gpus="node"`` (the node's first rank watches every GPU; ``"own"``:
    each rank its own), ``interval_s``, ``history_s``, ``log_every`` (default: the Trainer's
    ``log_every_n_steps``), ``report``."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = Options(**options)
        self.watch: Watch | None = None
        #: where the run's report was written, once fit ended
        self.report_path: Path | None = None

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.watch is None:
            self.watch = make_watch(self.options, _node_rank(trainer, self.options)).start()

    def on_train_batch_end(
        self,
        trainer: Trainer,
        pl_module: LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        watch = self.watch
        if watch is None:
            return
        watch.step()
        every = self.options.log_every or trainer.log_every_n_steps
        if every and watch.steps % every == 0:
            _log(trainer, watch.log())

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        watch, self.watch = self.watch, None
        if watch is None:
            return
        if watch.steps:
            _log(trainer, watch.log())
        where = _checkpoint_dir(trainer) if self.options.report else None
        self.report_path = finish(watch, where, trainer.global_rank)
        if self.report_path is not None:
            _artifact(trainer, self.report_path)

    def on_exception(
        self, trainer: Trainer, pl_module: LightningModule, exception: BaseException
    ) -> None:
        self.on_fit_end(trainer, pl_module)

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop()


def _node_rank(trainer: Trainer, options: Options) -> int:
    """The rank's place on the node; for ``"own"``, its device's place among the GPUs it
    sees (the device's index, read off the strategy: no CUDA call)."""
    device = trainer.strategy.root_device
    if options.gpus == "own" and device.type == "cuda" and device.index is not None:
        return int(device.index)
    return int(trainer.local_rank)


def _log(trainer: Trainer, log: Log) -> None:
    step = trainer.global_step
    for logger in trainer.loggers:
        logger.log_metrics(dict(log.scalars), step=step)
        writer = getattr(logger, "experiment", None)
        add_text = getattr(writer, "add_text", None) if trainer.is_global_zero else None
        if callable(add_text):  # TensorBoard's SummaryWriter
            add_text("gputui/steps", log.steps.text(), step)
            if log.new_findings:
                add_text("gputui/findings", "\n\n".join(f.text() for f in log.new_findings), step)
        elif isinstance(logger, WandbLogger) and log.new_findings:
            rows = [[f.where, f.severity, f.rule, f.text()] for f in log.new_findings]
            logger.log_text("gputui/findings", ["where", "severity", "rule", "text"], rows, step)


def _checkpoint_dir(trainer: Trainer) -> Path:
    """Where the checkpoints go (the checkpoint callback's folder), else the log folder."""
    callback = trainer.checkpoint_callback
    dirpath = getattr(callback, "dirpath", None)
    if dirpath:
        return Path(dirpath)
    return Path(trainer.log_dir or trainer.default_root_dir)


def _artifact(trainer: Trainer, path: Path) -> None:
    """The report as a file of the run where the logger keeps files."""
    for logger in trainer.loggers:
        if isinstance(logger, MLFlowLogger) and logger.run_id:
            logger.experiment.log_artifact(logger.run_id, str(path))
        elif isinstance(logger, WandbLogger):
            logger.experiment.save(str(path), base_path=str(path.parent))
