"""Model evaluation: a model's outputs on a split, scored by the run's task (``backend.tasks``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.runtime import autocast

__all__ = ["evaluate", "metrics_from_probs", "predict_probs"]

if TYPE_CHECKING:
    from backend.data.batching import Encoded


@torch.no_grad()
def predict_probs(
    model: Any,
    enc: Encoded,
    device: torch.device,
    precision: str = "fp32",
    batch_size: int = 64,
    group_by_length: bool = True,
    forward: Callable[[list[int]], Any] | None = None,
    task: Task | None = None,
) -> np.ndarray:
    """The task's outputs (class probabilities, scores) for every row of ``enc``, in ``enc``'s
    order (eval mode).

    Length-sorted batches pad least; the rows are put back in their original order.
    ``forward`` (rows -> output) replaces the model's own, e.g. over cached lower layers.
    """
    task = task or tasks.get(None)
    was_training = model.training
    model.eval()
    rows_out: list[Any] = [None] * len(enc)
    for rows in enc.index_batches(batch_size, shuffle=False, group_by_length=group_by_length):
        batch = enc.batch(rows)
        labels = batch.pop("labels")  # a per-token task's say which positions are words
        with autocast(device, precision):
            out = (
                forward(rows) if forward is not None else model(**{k: v.to(device) for k, v in batch.items()})
            )
            logits = getattr(out, "logits", out)  # a probe returns its logits as they are
        for i, out in zip(rows, task.row_outputs(task.outputs(logits), labels), strict=True):
            rows_out[i] = out
    model.train(was_training)
    return task.stack(rows_out, enc.labels)


def evaluate(
    model: Any,
    enc: Encoded,
    label_names: list[str],
    device: torch.device,
    precision: str = "fp32",
    forward: Callable[[list[int]], Any] | None = None,
    task: Task | None = None,
) -> dict[str, Any]:
    probs = predict_probs(model, enc, device, precision, forward=forward, task=task)
    return metrics_from_probs(enc.truth(), probs, label_names, task)


def metrics_from_probs(
    labels: np.ndarray, probs: np.ndarray, label_names: list[str], task: Task | None = None
) -> dict[str, Any]:
    """The task's metrics of its outputs, with ``score`` (the primary one) and ``eval_loss``."""
    return (task or tasks.get(None)).metrics(labels, probs, label_names)
