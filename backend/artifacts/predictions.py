"""Every evaluation example of a run with its prediction: the file error analysis reads.

``eval_predictions.parquet`` in the run folder holds, per evaluation row, the source row,
the text (and pair), the true and predicted label, the confidence and every class's
probability. It holds evaluation texts, so exports leave it out unless asked (as they do
the sample predictions). Calibration (expected calibration error and the reliability
diagram's bins) comes from the same probabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from backend.tasks import registry as tasks
from backend.tasks.base import Task

PREDICTIONS_FILE = "eval_predictions.parquet"
EVALUATIONS_DIR = "evaluations"  # in a run folder: dataset-<id>.parquet/.json per other dataset
ECE_BINS = 10


def write_predictions(
    target: Path, split: Any, probs: np.ndarray, label_names: list[str], task: Task | None = None
) -> None:
    """``target``: a run folder (its own evaluation) or a .parquet path (another dataset's);
    ``split``: the evaluated Split (texts, pairs, targets, rows); ``probs``: the task's outputs
    ([rows, classes] probabilities for classification), whose columns the task names."""
    task = task or tasks.get(None)
    frame = pd.DataFrame(
        {
            "row": split.rows,
            "text": split.texts,
            "pair": split.pairs if split.pairs is not None else [None] * len(split.texts),
            **task.frame_columns(list(split.labels), np.asarray(probs), label_names),
        }
    )
    path = target if target.suffix == ".parquet" else target / PREDICTIONS_FILE
    tmp = path.with_name(path.name + ".tmp")  # written whole, then renamed: never half a file
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)


def read_predictions(source: str | Path) -> pd.DataFrame | None:
    """A run folder's own evaluation predictions, or those in a .parquet path; None if absent."""
    path = Path(source)
    path = path if path.suffix == ".parquet" else path / PREDICTIONS_FILE
    return pd.read_parquet(path) if path.is_file() else None


def calibration(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> dict[str, Any]:
    """Expected calibration error (Guo et al. 2017: equal-width confidence bins, weighted by
    their share of rows) and the reliability diagram's bins: [{low, high, rows, confidence,
    accuracy}] for the bins that hold rows."""
    confidence, correct = np.asarray(confidence, float), np.asarray(correct, float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    out, ece = [], 0.0
    for b in range(bins):
        mask = index == b
        if not mask.any():
            continue
        conf, acc = float(confidence[mask].mean()), float(correct[mask].mean())
        ece += mask.mean() * abs(acc - conf)
        out.append({"low": float(edges[b]), "high": float(edges[b + 1]), "rows": int(mask.sum()),
                    "confidence": conf, "accuracy": acc})  # fmt: skip
    return {"ece": float(ece), "bins": out}
