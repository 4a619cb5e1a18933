"""Model evaluation: a model's outputs on a split, as the run's task (``backend.tasks``) predicts
and scores them (``Task.predict``, ``Task.evaluate``); this module supplies the device and the
run's precision, which the tasks, below training, do not know."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from backend.tasks import registry as tasks
from backend.tasks.base import Inference, Task
from backend.training.runtime import autocast

__all__ = ["evaluate", "inference", "metrics_from_probs", "predict_probs"]

if TYPE_CHECKING:
    from backend.data.batching import Encoded


def inference(
    device: torch.device,
    precision: str = "fp32",
    batch_size: int = 64,
    group_by_length: bool = True,
    forward: Callable[[list[int]], Any] | None = None,
) -> Inference:
    """How a task runs the model here: on ``device``, under the run's autocast."""
    return Inference(device, lambda: autocast(device, precision), batch_size, group_by_length, forward)


def predict_probs(
    model: Any,
    enc: Encoded,
    device: torch.device,
    precision: str = "fp32",
    batch_size: int = 64,
    group_by_length: bool = True,
    forward: Callable[[list[int]], Any] | None = None,
    task: Task | None = None,
) -> Any:
    """The task's outputs (class probabilities, scores, ...) for every row of ``enc``, in
    ``enc``'s order (``Task.predict``). ``forward`` (rows -> output) replaces the model's own."""
    run = inference(device, precision, batch_size, group_by_length, forward)
    return (task or tasks.get(None)).predict(model, enc, run)


def evaluate(
    model: Any,
    enc: Encoded,
    label_names: list[str],
    device: torch.device,
    precision: str = "fp32",
    forward: Callable[[list[int]], Any] | None = None,
    task: Task | None = None,
    outputs: Any = None,
) -> dict[str, Any]:
    """The task's evaluation of ``model`` on ``enc`` (``Task.evaluate``): its metrics, with
    ``score`` and ``eval_loss``; ``outputs``: already predicted."""
    run = inference(device, precision, forward=forward)
    return (task or tasks.get(None)).evaluate(model, enc, label_names, run, outputs)


def metrics_from_probs(
    labels: np.ndarray, probs: np.ndarray, label_names: list[str], task: Task | None = None
) -> dict[str, Any]:
    """The task's metrics of outputs predicted already, with ``score`` (the primary one) and
    ``eval_loss`` (for another file's rows: ``backend.evaluation``)."""
    return (task or tasks.get(None)).metrics(labels, probs, label_names)
