"""Regression: a number per text or text pair (STS-B's similarity 0-5, a rating, a price).

The head is one output (``AutoModelForSequenceClassification`` with ``num_labels=1`` and
``problem_type="regression"``: transformers trains it with mean squared error). Metrics:
Spearman (primary: the STS convention, and blind to the scale a head has not yet found),
Pearson (scipy), RMSE and MAE. Baseline: always the training mean, whose RMSE is the
evaluation rows' spread around it and whose correlations are 0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.cells import NUMBER_RE, listing
from backend.errors import DataError
from backend.tasks.base import TEXT, TEXT_PAIR, Role, Task, chart

if TYPE_CHECKING:
    import torch

MANY_VALUES = 20  # "auto" offers regression for a numeric column with at least this many values
MIN_ROWS = 4  # a correlation of fewer rows says nothing
STRATA = 5  # the split keeps each fifth of the score range in both sides
SCORE = "score"  # the head's one output name


class Regression(Task):
    key = "regression"
    label = "Regression"
    description = "A number per text or text pair (similarity, rating, price)."
    primary_metric = "spearman"
    headline = ("spearman", "pearson", "rmse", "mae")
    baseline_label = "always the training mean"
    peft_task_type = "SEQ_CLS"
    card_output = "scores = getattr(out, 'logits', out).squeeze(-1)  # one number per text\nprint(scores)\n"
    roles = (
        TEXT,
        TEXT_PAIR,
        Role(
            "score", "label", "Score column",
            "Column holding a number to predict: the regression task's label column.",
            ("score", "rating"),
        ),
    )  # fmt: skip

    def card_outputs(self, label_names: list[str]) -> str:
        return 'Outputs one number per text (regression: a single output, `problem_type="regression"`).'

    def fits(self, names: list[str], numeric: bool) -> bool:
        """Numbers, some not whole, with many distinct values. Whole numbers stay classes under
        "auto" (class ids, star ratings, and every run from before tasks existed)."""
        if numeric or len(set(names)) < MANY_VALUES or not all(NUMBER_RE.fullmatch(n) for n in names):
            return False
        return any(not float(n).is_integer() for n in names)

    def bad_rows(self, names: list[str]) -> list[int]:
        return [i for i, n in enumerate(names) if not _number(n)]

    def label_names(
        self, names: list[str], numeric: bool, rows: list[int], column: str, source: str, splitting: bool
    ) -> list[str]:
        self.eval_warnings(names, rows, [SCORE], column, source)
        if len(names) < MIN_ROWS or len(set(names)) < 2:
            raise DataError(
                f"{source}: column '{column}' has {len(set(names))} distinct value(s) in {len(names)} "
                f"row(s); regression needs at least 2 values and {MIN_ROWS} rows."
            )
        return [SCORE]

    def eval_warnings(
        self, names: list[str], rows: list[int], label_names: list[str], column: str, source: str
    ) -> list[str]:
        """Every score a number, else a DataError with the count and the rows."""
        bad = self.bad_rows(names)
        if bad:
            where = ("row " if len(bad) == 1 else "rows ") + listing([rows[i] for i in bad])
            raise DataError(
                f"{source}: column '{column}' holds {len(bad)} value(s) that are not numbers (e.g. "
                f"'{names[bad[0]]}'; {where}); regression needs a number in every row. Fix them, "
                "or drop those rows (--drop-invalid)."
            )
        return []

    def targets(self, names: list[str], label_names: list[str]) -> list[Any]:
        return [float(n) for n in names]

    def strata(self, targets: list[Any]) -> list[int]:
        """Quantile bins of the scores, so a split keeps the range on both sides."""
        values = np.asarray(targets, dtype=float)
        edges = np.unique(np.quantile(values, np.linspace(0, 1, STRATA + 1)[1:-1]))
        bins = np.searchsorted(edges, values, side="right")
        counts = np.bincount(bins)
        # a bin of one row cannot give a row to both sides: fold it into its neighbour
        return [int(b - 1 if counts[b] < 2 and b > 0 else b) for b in bins]

    def model_kwargs(self, label_names: list[str]) -> dict[str, Any]:
        return {"num_labels": 1, "id2label": {0: SCORE}, "label2id": {SCORE: 0}, "problem_type": "regression"}

    def distribution(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Rows per tenth of the score range ("0–0.5": 40, ...); unreadable scores left out."""
        values = np.asarray([float(n) for n in names if _number(n)])
        if not len(values):
            return {}
        counts, edges = np.histogram(values, bins=10)
        return {f"{edges[i]:g}–{edges[i + 1]:g}": int(c) for i, c in enumerate(counts)}

    def label_chart(self, names: list[str], numeric: bool) -> dict[str, Any]:
        """Rows per tenth of the score range, lowest first."""
        return chart("Score distribution", "score", "rows", self.distribution(names, numeric))

    def describe_labels(self, names: list[str], numeric: bool) -> str:
        values = [float(n) for n in names if _number(n)]
        if not values:
            return "no numeric scores"
        return (
            f"a number per row (regression): {min(values):g} to {max(values):g}, mean {np.mean(values):.2f}"
        )

    def start_head(self, head: torch.nn.Module, targets: list[Any]) -> None:
        """The output's bias starts at the training mean. An AdamW step moves a weight by about
        the learning rate, so a head starting at 0 needs hundreds of steps to reach a mean of
        2.5 (STS-B) before it learns anything else; a head without a bias (Llama's ``score``)
        is left as it is."""
        import torch

        last = [m for m in head.modules() if isinstance(m, torch.nn.Linear) and m.out_features == 1]
        if last and last[-1].bias is not None:
            with torch.no_grad():
                last[-1].bias.fill_(float(np.mean(targets)))

    def collate(
        self, inputs: dict[str, torch.Tensor], rows: list[dict[str, Any]], targets: list[Any], left: bool
    ) -> dict[str, torch.Tensor]:
        import torch

        return {**inputs, "labels": torch.tensor(targets, dtype=torch.float)}  # the head's MSE

    view_kind = "score"
    predicts = "a number"

    def error_rows(
        self, frame: Any, wrong_only: bool, true_label: str | None, predicted_label: str | None, sort: str
    ) -> Any:
        """Residuals: "wrong" is off by more than the run's RMSE; the largest errors first
        (``confidence_asc``: the smallest)."""
        if wrong_only:
            frame = frame[frame["error"].abs() > np.sqrt(np.mean(frame["error"] ** 2))]
        if sort != "row":
            frame = frame.iloc[np.argsort(-frame["error"].abs().to_numpy(), kind="stable")]
            frame = frame.iloc[::-1] if sort == "confidence_asc" else frame
        return frame

    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.float()

    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        from scipy import stats

        true, predicted = np.asarray(true, dtype=float), np.asarray(outputs, dtype=float).reshape(-1)
        errors = predicted - true
        metrics = {
            "spearman": _correlation(stats.spearmanr, true, predicted),
            "pearson": _correlation(stats.pearsonr, true, predicted),
            "rmse": float(np.sqrt(np.mean(errors**2))),
            "mae": float(np.mean(np.abs(errors))),
            "eval_loss": float(np.mean(errors**2)),  # MSE: what the head trains on
        }
        metrics["score"] = metrics["spearman"]
        return metrics

    def score(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None = None) -> float:
        from scipy import stats

        return _correlation(
            stats.spearmanr, np.asarray(true, dtype=float), np.asarray(outputs, dtype=float).reshape(-1)
        )

    def row_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        return (np.asarray(outputs, dtype=float).reshape(-1) - np.asarray(true, dtype=float)) ** 2

    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        mean = float(np.mean(train))
        errors = np.asarray(evaluation, dtype=float) - mean
        rmse, mae = float(np.sqrt(np.mean(errors**2))), float(np.mean(np.abs(errors)))
        return {"mean": mean, "rmse": rmse, "mae": mae, "spearman": 0.0, "pearson": 0.0, "score": 0.0}

    def predictions(self, outputs: np.ndarray, label_names: list[str]) -> list[Any]:
        return [float(v) for v in np.asarray(outputs, dtype=float).reshape(-1)]

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        import torch.nn.functional as F

        return F.mse_loss(logits.float().reshape(-1), targets.float())

    def prediction_columns(self, outputs: np.ndarray, label_names: list[str]) -> dict[str, list[Any]]:
        return {"score": [round(v, 6) for v in self.predictions(outputs, label_names)]}

    def prediction_items(self, outputs: np.ndarray, label_names: list[str]) -> list[dict[str, Any]]:
        values = self.predictions(outputs, label_names)
        return [{"label": f"{v:.4g}", "probability": None, "score": v} for v in values]

    def frame_columns(
        self, targets: list[Any], outputs: np.ndarray, label_names: list[str]
    ) -> dict[str, Any]:
        true = np.asarray(targets, dtype=np.float64)
        predicted = np.asarray(outputs, dtype=np.float64).reshape(-1)
        return {"true": true, "predicted": predicted, "error": predicted - true}

    def scoring(self, runs: list[tuple[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray], Any, str]:
        """Scores as numbers, paired by Spearman (a paired permutation test)."""
        true = np.asarray(runs[0][1]["true"], dtype=float)
        return true, {name: np.asarray(f["predicted"], dtype=float) for name, f in runs}, spearman, "spearman"

    def target_names(self, targets: list[Any], label_names: list[str]) -> list[str]:
        return [str(float(v)) for v in targets]

    def intervals(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        from backend.significance import score_interval

        true, predicted = np.asarray(true, dtype=float), np.asarray(outputs, dtype=float).reshape(-1)
        return {
            "score": self.score(true, predicted),
            "score_ci": list(score_interval(true, predicted, spearman)),
        }


def spearman(true: np.ndarray, predicted: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rho along ``axis`` (vectorized for the bootstrap): Pearson of average ranks;
    0 where either side is constant (a resample of equal scores correlates with nothing)."""
    from scipy import stats

    a = stats.rankdata(true, axis=axis)
    b = stats.rankdata(predicted, axis=axis)
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    denominator = np.sqrt((a**2).sum(axis=axis) * (b**2).sum(axis=axis))
    numerator = (a * b).sum(axis=axis)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator, dtype=float), where=denominator > 0)


def _correlation(test: Any, true: np.ndarray, predicted: np.ndarray) -> float:
    """scipy's coefficient, 0 where it is undefined (a constant prediction: the baseline's)."""
    if len(true) < 2 or np.ptp(true) == 0 or np.ptp(predicted) == 0:
        return 0.0
    value = float(test(true, predicted)[0])
    return 0.0 if math.isnan(value) else value


def _number(name: str) -> bool:
    return bool(NUMBER_RE.fullmatch(name)) and math.isfinite(float(name))
