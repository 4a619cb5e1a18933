"""What a runner is given (``RunContext``) and what it hands back (``RunOutcome``).

Both runners (the training loop and the cached-feature probe) take the same context and
return the same outcome; ``backend.run`` then writes the artifact folder once for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from backend.catalogue import ModelInfo
from backend.data.prepare import PreparedData
from backend.tasks.base import Task
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig
from backend.training.runtime import peak_rss_mb


@dataclass
class RunContext:
    """Everything a runner needs: the validated config, the data, the base model's facts."""

    cfg: TrainConfig
    data: PreparedData
    info: ModelInfo
    tokenizer: Any
    cb: Callback
    started: float  # perf_counter() when the run began: train_seconds counts from here
    models_cache: Path | None = None
    feature_cache_dir: Path | None = None
    checkpoint_dir: Path | None = None
    resume_from: Path | None = None


@dataclass
class RunOutcome:
    """A finished run: its summary, best and per-epoch metrics, and the weights to save."""

    cfg: TrainConfig  # with the numbers it trained with ("auto" resolved)
    summary: dict[str, Any]
    best: dict[str, Any]
    history: list[dict[str, Any]]
    eval_probs: np.ndarray
    model: Any = None  # a model trained through its forward: saved by its library
    probe: dict[str, Any] | None = None  # a probe head: its config (layer, pooling, sizes)
    head_state: dict[str, Any] = field(default_factory=dict)  # the probe head's tensors
    # the task as the run ended: its "auto" settings chosen on held-out rows (None: as it began)
    task: Task | None = None


def run_summary(
    ctx: RunContext,
    best: dict[str, Any],
    *,
    device: str,
    trainable: int,
    total: int,
    train_seconds: float,
    seconds_per_epoch: float | None,
    train_rows: int,
    eval_rows: int,
    peak_gpu: float | None = None,
) -> dict[str, Any]:
    """The summary keys every run has (one definition for both runners)."""
    return {
        "method": ctx.cfg.method,
        "quant": ctx.cfg.quant,
        "device": device,
        # the task's headline metrics (classification: accuracy, macro_f1) and its primary one
        "task": ctx.data.task.key,
        "primary_metric": ctx.data.task.primary_of(ctx.data.label_names),
        "score": best["score"],
        **ctx.data.task.headline_of(best),
        "eval_loss": best["eval_loss"],
        "best_epoch": best["epoch"],
        "trainable_params": trainable,
        "total_params": total,
        "train_seconds": round(train_seconds, 3),
        "seconds_per_epoch": seconds_per_epoch,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "peak_gpu_mb": peak_gpu,
        "train_rows": train_rows,
        "eval_rows": eval_rows,
    }
