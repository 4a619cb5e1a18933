"""Text classification: one label per text or text pair (the app's first task, the default).

Metrics by scikit-learn (``evaluate.load`` would need the hub): accuracy (primary), macro-F1,
per-class precision/recall/F1 and the confusion matrix. Baseline: always the training data's
most frequent class.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.catalogue import label_kwargs
from backend.cells import MAX_LISTED, NUMBER_RE, listing, sorted_label_names
from backend.errors import DataError
from backend.tasks.base import Task

if TYPE_CHECKING:
    import torch


class Classification(Task):
    key = "classification"
    label = "Text classification"
    description = "A label per text or text pair (sentiment, topic, spam, entailment)."
    primary_metric = "accuracy"
    headline = ("accuracy", "macro_f1")
    baseline_label = "always the majority class"
    peft_task_type = "SEQ_CLS"
    baseline_key = "majority_baseline"
    card_output = "probs = torch.softmax(getattr(out, 'logits', out), -1)\nprint(probs)\n"

    def fits(self, names: list[str], numeric: bool) -> bool:
        return True  # any column of names can be classes: the fallback of "auto"

    def label_names(
        self, names: list[str], numeric: bool, rows: list[int], column: str, source: str, splitting: bool
    ) -> list[str]:
        fractional = next((i for i, n in enumerate(names) if _fractional(n)), None)
        if fractional is not None and all(NUMBER_RE.fullmatch(n) for n in names):
            raise DataError(
                f"{source}: column '{column}' holds non-whole numbers (e.g. {names[fractional]} in row "
                f"{rows[fractional]}); that looks like regression: choose the regression task "
                "(--task regression), or use class labels (whole numbers or names)."
            )
        check_classes(names, column, source, splitting=splitting)
        return sorted_label_names(names, numeric)

    def targets(self, names: list[str], label_names: list[str]) -> list[Any]:
        ids = {name: i for i, name in enumerate(label_names)}
        return [ids[n] for n in names]

    def unknown_labels(self, names: list[str], label_names: list[str]) -> list[str]:
        return sorted(set(names) - set(label_names))

    def eval_warnings(
        self, names: list[str], rows: list[int], label_names: list[str], column: str, source: str
    ) -> list[str]:
        return check_eval_labels(names, label_names, source)

    def strata(self, targets: list[Any]) -> list[int]:
        return list(targets)

    def model_kwargs(self, label_names: list[str]) -> dict[str, Any]:
        return label_kwargs(label_names)

    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.float().softmax(-1)

    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        metrics = classification_metrics(true, outputs.argmax(-1), label_names)
        # "+ 0.0" turns the -0.0 of a perfect fit into 0.0 (logs would print "-0.0000").
        metrics["eval_loss"] = float(self.row_losses(true, outputs).mean()) + 0.0
        metrics["score"] = metrics["accuracy"]
        return metrics

    def score(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None = None) -> float:
        return float((np.asarray(outputs).argmax(-1) == np.asarray(true)).mean())

    def row_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Each row's cross-entropy."""
        true = np.asarray(true, dtype=int)
        return -np.log(np.clip(outputs[np.arange(len(true)), true], 1e-12, 1.0))

    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        """Always the training data's most frequent class: a run that does not beat it has
        learned nothing usable, however good its accuracy looks on an imbalanced set."""
        majority = int(np.bincount(np.asarray(train, dtype=int), minlength=len(label_names)).argmax())
        names = [str(i) for i in range(len(label_names))]
        metrics = classification_metrics(evaluation, [majority] * len(evaluation), names)
        return {"label_id": majority, "accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"],
                "score": metrics["accuracy"]}  # fmt: skip

    def card_outputs(self, label_names: list[str]) -> str:
        return f"Labels: {', '.join(label_names)}."

    def epoch_text(self, metrics: dict[str, Any]) -> str:
        return (
            f"accuracy {metrics['accuracy']:.4f} macro-F1 {metrics['macro_f1']:.4f} "
            f"eval loss {metrics['eval_loss']:.4f}"
        )

    def baseline_text(self, baseline: dict[str, Any]) -> str:
        accuracy = baseline["accuracy"]
        return f"the majority class ({accuracy:.1%} accuracy by always answering the most frequent label)"

    def predictions(self, outputs: np.ndarray, label_names: list[str]) -> list[Any]:
        return [label_names[i] for i in outputs.argmax(-1)]

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        import torch.nn.functional as F

        return F.cross_entropy(logits, targets)

    def prediction_columns(self, outputs: np.ndarray, label_names: list[str]) -> dict[str, list[Any]]:
        outputs = np.asarray(outputs)
        return {
            "predicted_label": self.predictions(outputs, label_names),
            "probability": [round(float(p), 6) for p in outputs.max(-1)],
        }

    def prediction_items(self, outputs: np.ndarray, label_names: list[str]) -> list[dict[str, Any]]:
        columns = self.prediction_columns(outputs, label_names)
        pairs = zip(columns["predicted_label"], columns["probability"], strict=True)
        return [{"label": label, "probability": p, "score": None} for label, p in pairs]

    def frame_columns(
        self, targets: list[Any], outputs: np.ndarray, label_names: list[str]
    ) -> dict[str, Any]:
        probs = np.asarray(outputs, dtype=np.float64)
        predicted = probs.argmax(-1)
        return {
            "true": [label_names[i] for i in targets],
            "predicted": [label_names[i] for i in predicted],
            "confidence": probs.max(-1),
            "correct": predicted == np.asarray(targets),
            "probs": list(probs),
        }

    def target_names(self, targets: list[Any], label_names: list[str]) -> list[str]:
        return [label_names[i] for i in targets]

    def intervals(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        from backend.significance import accuracy, macro_f1, score_interval

        predicted = outputs.argmax(-1)
        return {
            "score": float(accuracy(true, predicted)),
            "score_ci": list(score_interval(true, predicted)),
            "macro_f1_ci": list(score_interval(true, predicted, macro_f1(len(label_names)))),
        }


def _fractional(name: str) -> bool:
    return bool(NUMBER_RE.fullmatch(name)) and not float(name).is_integer()


def check_classes(names: list[str], column: str, source_name: str, *, splitting: bool) -> None:
    """At least 2 classes; when an eval set is split off, at least 2 rows per class."""
    counts = Counter(names)
    if len(counts) < 2:
        (only, count), *_ = counts.items()
        raise DataError(
            f"{source_name}: column '{column}' has only one class ('{only}', {count} "
            "rows); classification needs at least 2. Check the label column or add "
            "rows of other classes."
        )
    small = [f"'{label}' ({n} row)" for label, n in sorted(counts.items()) if n < 2]
    if splitting and small:
        # A mis-mapped label column (e.g. an id) makes every row its own class: say so.
        hint = (
            f" {len(small)} of {len(counts)} classes have a single row: "
            f"is '{column}' really the label column?"
            if len(small) > MAX_LISTED
            else ""
        )
        raise DataError(
            f"{source_name}: too few rows to split off an evaluation set for class "
            f"{listing(small)}; each class needs at least 2 rows. Add rows for it, "
            f"or provide a separate eval file.{hint}"
        )


def classification_metrics(
    labels: list[int] | np.ndarray, preds: list[int] | np.ndarray, label_names: list[str]
) -> dict[str, Any]:
    """Accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

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


def check_eval_labels(names: list[str], label_names: list[str], source_name: str) -> list[str]:
    """Reject eval labels unseen in training; warn about classes with no eval rows."""
    unknown = sorted(set(names) - set(label_names))
    if unknown:
        raise DataError(
            f"{source_name}: eval label(s) not in the training data: "
            f"{listing(unknown)}; "
            f"training labels: {listing(label_names)}. Fix the eval labels or add "
            "training rows for them."
        )
    unseen = [label for label in label_names if label not in set(names)]
    if unseen:
        return [f"{source_name}: no eval rows for class(es) {listing(unseen)}."]
    return []
