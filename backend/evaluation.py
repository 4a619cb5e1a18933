"""Classification metrics (sklearn; ``evaluate.load`` would need the hub)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support


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
