"""Classification metrics (sklearn; ``evaluate.load`` would need the hub) and model evaluation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

from backend.training.runtime import autocast

if TYPE_CHECKING:
    from backend.data.batching import Encoded


def classification_metrics(
    labels: list[int] | np.ndarray, preds: list[int] | np.ndarray, label_names: list[str]
) -> dict[str, Any]:
    """Accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix."""
    ids = list(range(len(label_names)))
    p, r, f, s = precision_recall_fscore_support(labels, preds, labels=ids, zero_division=0)
    per_class = {
        name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
        for i, name in enumerate(label_names)
    }
    return {
        "accuracy": float(accuracy_score(labels, preds)),
        "macro_f1": float(f1_score(labels, preds, labels=ids, average="macro", zero_division=0)),
        "per_class": per_class,
        "confusion_matrix": confusion_matrix(labels, preds, labels=ids).tolist(),
    }


@torch.no_grad()
def predict_probs(
    model: Any,
    enc: Encoded,
    device: torch.device,
    precision: str = "fp32",
    batch_size: int = 64,
    group_by_length: bool = True,
    forward: Callable[[list[int]], Any] | None = None,
) -> np.ndarray:
    """Class probabilities for every row of ``enc``, in ``enc``'s order (eval mode).

    Length-sorted batches pad least; the rows are put back in their original order.
    ``forward`` (rows -> output) replaces the model's own, e.g. over cached lower layers.
    """
    was_training = model.training
    model.eval()
    probs = torch.empty((len(enc), 0))
    for rows in enc.index_batches(batch_size, shuffle=False, group_by_length=group_by_length):
        with autocast(device, precision):
            if forward is not None:
                logits = forward(rows).logits
            else:
                batch = enc.batch(rows)
                batch.pop("labels")
                logits = model(**{k: v.to(device) for k, v in batch.items()}).logits
        if probs.shape[1] == 0:
            probs = torch.empty((len(enc), logits.shape[-1]))
        probs[rows] = torch.softmax(logits.float(), -1).cpu()
    model.train(was_training)
    return probs.numpy()


def evaluate(
    model: Any,
    enc: Encoded,
    label_names: list[str],
    device: torch.device,
    precision: str = "fp32",
    forward: Callable[[list[int]], Any] | None = None,
) -> dict[str, Any]:
    probs = predict_probs(model, enc, device, precision, forward=forward)
    return metrics_from_probs(np.asarray(enc.labels), probs, label_names)


def metrics_from_probs(labels: np.ndarray, probs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
    """classification_metrics of the argmax, plus the mean cross-entropy ("eval_loss")."""
    metrics = classification_metrics(labels, probs.argmax(-1), label_names)
    # "+ 0.0" turns the -0.0 of a perfect fit into 0.0 (logs would print "-0.0000").
    metrics["eval_loss"] = float(row_losses(labels, probs).mean()) + 0.0
    return metrics


def row_losses(labels: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Each row's cross-entropy (the learning-rate search compares candidates row by row)."""
    return -np.log(np.clip(probs[np.arange(len(labels)), labels], 1e-12, 1.0))


def majority_baseline(train_labels: list[int], eval_labels: list[int], num_labels: int) -> dict[str, float]:
    """What always answering the training data's most frequent class scores on the eval set.

    A run that does not beat this has learned nothing usable, however good its accuracy
    looks on an imbalanced set.
    """
    majority = int(np.bincount(np.asarray(train_labels), minlength=num_labels).argmax())
    names = [str(i) for i in range(num_labels)]
    metrics = classification_metrics(eval_labels, [majority] * len(eval_labels), names)
    return {"label_id": majority, "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}
