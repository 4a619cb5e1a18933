"""The hook a training run reports through (the job queue and the CLI plug in here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The headline figures of a finished run, as named in its summary (model card, job columns).
SUMMARY_METRICS = (
    "score",  # the task's primary metric (accuracy for classification)
    "accuracy",
    "macro_f1",
    "eval_loss",
    "trainable_params",
    "total_params",
    "train_seconds",
    "peak_rss_mb",
    "adapter_bytes",
)


class TrainingCancelled(Exception):
    """Raised inside the training loop when the callback asks to stop."""


class TrialPruned(Exception):
    """Raised by a sweep trial's callback when the study's pruner stops it after an epoch."""


@dataclass
class StepInfo:
    """One optimizer step."""

    step: int  # optimizer steps done so far (1-based)
    total_steps: int
    epoch: int  # 1-based epoch this step belongs to
    loss: float
    lr: float
    samples_per_second: float
    elapsed_seconds: float
    tokens_per_second: float | None = None  # real (unpadded) tokens; None where rows are features


@dataclass
class EpochInfo:
    """One evaluation, after an epoch."""

    epoch: int
    total_epochs: int
    step: int
    metrics: dict[str, Any]  # the task's (accuracy, macro_f1, ...), score, eval_loss, tables
    train_loss: float
    is_best: bool

    @property
    def scalars(self) -> dict[str, float]:
        return scalar_metrics(self.metrics)


@dataclass
class LayerInfo:
    """One probed layer's result in a layer sweep (its best epoch)."""

    layer: int  # 0 = embeddings, 1..L = transformer layers
    done: int  # layers finished so far, this one included
    total: int  # layers in the sweep
    metrics: dict[str, Any]
    train_loss: float

    @property
    def scalars(self) -> dict[str, float]:
        return scalar_metrics(self.metrics)


def scalar_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """An evaluation's numbers for curves and trackers, in the task's order (classification:
    accuracy, macro_f1; regression: spearman, pearson, rmse, mae), then ``eval_loss``; ``score``
    repeats the primary one and is left out."""
    return {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in ("score", "epoch")
    }


class Callback:
    """No-op base: override what you need. ``should_cancel`` is polled every step."""

    def on_start(self, info: dict[str, Any]) -> None:
        """Called once the model is built: trainable/total params, steps, device."""

    def on_step(self, info: StepInfo) -> None:
        """Called after every optimizer step."""

    def on_epoch(self, info: EpochInfo) -> None:
        """Called after each epoch's evaluation."""

    def on_layer(self, info: LayerInfo) -> None:
        """Called after each layer of a probe layer sweep."""

    def on_checkpoint(self, epoch: int, path: str) -> None:
        """Called when a resumable checkpoint for ``epoch`` has been written."""

    def on_log(self, message: str) -> None:
        """A human-readable progress line."""

    def should_cancel(self) -> bool:
        return False
