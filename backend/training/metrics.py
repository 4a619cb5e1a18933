"""Classification metrics (sklearn; ``evaluate.load`` would need the hub) and model evaluation."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

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


def autocast(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    """bf16 autocast on GPUs that support it, fp16 otherwise; plain fp32 on the CPU."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.autocast("cuda", dtype=dtype)


@torch.no_grad()
def predict_probs(model: Any, enc: Encoded, device: torch.device, batch_size: int = 64) -> np.ndarray:
    """Class probabilities for every row of ``enc`` (eval mode, no padding beyond the batch)."""
    was_training = model.training
    model.eval()
    out = []
    for batch in enc.batches(batch_size, shuffle=False):
        batch.pop("labels")
        with autocast(device):
            logits = model(**{k: v.to(device) for k, v in batch.items()}).logits
        out.append(torch.softmax(logits.float(), -1).cpu())
    model.train(was_training)
    return torch.cat(out).numpy()


def evaluate(model: Any, enc: Encoded, label_names: list[str], device: torch.device) -> dict[str, Any]:
    return metrics_from_probs(np.asarray(enc.labels), predict_probs(model, enc, device), label_names)


def metrics_from_probs(labels: np.ndarray, probs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
    """classification_metrics of the argmax, plus the mean cross-entropy ("eval_loss")."""
    metrics = classification_metrics(labels, probs.argmax(-1), label_names)
    # "+ 0.0" turns the -0.0 of a perfect fit into 0.0 (logs would print "-0.0000").
    picked = np.clip(probs[np.arange(len(labels)), labels], 1e-12, 1.0)
    metrics["eval_loss"] = float(-np.log(picked).mean()) + 0.0
    return metrics


def majority_baseline(train_labels: list[int], eval_labels: list[int], num_labels: int) -> dict[str, float]:
    """What always answering the training data's most frequent class scores on the eval set.

    A run that does not beat this has learned nothing usable, however good its accuracy
    looks on an imbalanced set.
    """
    majority = int(np.bincount(np.asarray(train_labels), minlength=num_labels).argmax())
    names = [str(i) for i in range(num_labels)]
    metrics = classification_metrics(eval_labels, [majority] * len(eval_labels), names)
    return {"label_id": majority, "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}
