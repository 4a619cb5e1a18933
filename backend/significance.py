"""How sure a score is, and whether two runs really differ (issue 37).

- ``score_interval``: a 95% interval for a run's score by bootstrap over its evaluation
  examples (``scipy.stats.bootstrap``, 1,000 resamples, seeded, so the same predictions always
  get the same interval).
- ``compare_pair``: two runs scored on the *same* evaluation rows: the difference with its
  paired-bootstrap interval, and a p-value: McNemar's exact test for accuracy (a binomial test
  on the rows exactly one run gets right, ``scipy.stats.binomtest``), a paired permutation test
  for any other metric (``scipy.stats.permutation_test``).
- ``holm``: the p-values of several comparisons against one best run, Holm-corrected
  (statsmodels), so that "better" and "worse" hold for the set, not for each pair alone.
- ``rows_digest``: what "the same evaluation rows" means: a digest of the rows' ids, texts and
  true labels. Runs with different digests are not paired.

The unit resampled is the example. A metric here is a vectorized function of the true and the
predicted labels (``METRICS``), checked against the scikit-learn code that reports the run's
scores (tests/unit/test_significance.py); a task with another unit (a sentence of tags, an
input with its references) brings its own.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 0
ALPHA = 0.05
BCA_MAX_ROWS = 1000  # above, the percentile interval (see _bootstrap)
BETTER, WITHIN_NOISE, WORSE = "better", "within noise", "worse"

# (true, predicted, axis) -> score along ``axis``; labels are integer class ids.
Metric = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def accuracy(true: np.ndarray, predicted: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(true == predicted, axis=axis)


def macro_f1(classes: int) -> Metric:
    """Macro-F1 over every class of the run (sklearn's ``labels=`` all ids, zero_division=0)."""

    def metric(true: np.ndarray, predicted: np.ndarray, axis: int = -1) -> np.ndarray:
        scores = []
        for k in range(classes):
            is_true, is_predicted = true == k, predicted == k
            tp = np.sum(is_true & is_predicted, axis=axis)
            wrong = np.sum(is_true ^ is_predicted, axis=axis)  # false positives + false negatives
            denominator = 2 * tp + wrong
            zeros = np.zeros_like(tp, dtype=float)  # a class nobody has or predicts: F1 0
            scores.append(np.divide(2 * tp, denominator, out=zeros, where=denominator > 0))
        return np.mean(scores, axis=0)

    return metric


def metric_named(name: str, classes: int) -> Metric:
    if name == "accuracy":
        return accuracy
    if name == "macro_f1":
        return macro_f1(classes)
    raise ValueError(f"no interval for the metric {name!r} (accuracy, macro_f1)")


def score_interval(
    true: np.ndarray, predicted: np.ndarray, metric: Metric = accuracy, seed: int = SEED
) -> tuple[float, float]:
    """A 95% bootstrap interval (BCa up to BCA_MAX_ROWS rows, else percentile; percentile also
    where BCa is undefined, e.g. every row right)."""
    true, predicted = np.asarray(true), np.asarray(predicted)
    if len(true) < 2:
        value = float(metric(true, predicted, -1))
        return value, value
    low, high = _bootstrap((true, predicted), lambda t, p, axis: metric(t, p, axis), seed)
    return low, high


@dataclass(frozen=True)
class Pair:
    """``a`` against ``b`` on the same rows: ``delta`` is a's score minus b's."""

    delta: float
    delta_ci: tuple[float, float]
    p_value: float
    test: str  # "McNemar exact" or "paired permutation"


def compare_pair(
    true: np.ndarray, a: np.ndarray, b: np.ndarray, metric: Metric = accuracy, seed: int = SEED
) -> Pair:
    true, a, b = np.asarray(true), np.asarray(a), np.asarray(b)
    if not len(true) == len(a) == len(b):
        raise ValueError("the two runs' predictions cover different numbers of rows")
    delta = float(metric(true, a, -1) - metric(true, b, -1))
    if len(true) < 2:
        return Pair(delta, (delta, delta), 1.0, "none")
    ci = _bootstrap((true, a, b), lambda t, x, y, axis: metric(t, x, axis) - metric(t, y, axis), seed)
    if metric is accuracy:
        return Pair(delta, ci, mcnemar_exact(true, a, b), "McNemar exact")
    return Pair(delta, ci, _permutation_p(true, a, b, metric, seed), "paired permutation")


def mcnemar_exact(true: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """McNemar's exact test: of the rows exactly one run gets right, is either run's share 1/2?"""
    right_a, right_b = np.asarray(a) == np.asarray(true), np.asarray(b) == np.asarray(true)
    only_a, only_b = int(np.sum(right_a & ~right_b)), int(np.sum(right_b & ~right_a))
    if only_a + only_b == 0:
        return 1.0
    return float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment (statsmodels): compare each adjusted p-value with ALPHA."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(p_values, alpha=ALPHA, method="holm")[1]]


def verdict(delta: float, adjusted_p: float) -> str:
    """``a`` against ``b``: better or worse only when the (adjusted) test says the gap is real."""
    if adjusted_p >= ALPHA or delta == 0:
        return WITHIN_NOISE
    return BETTER if delta > 0 else WORSE


def rows_digest(rows: list[Any], texts: list[Any], pairs: list[Any], true: list[Any]) -> str:
    """A digest of the evaluation rows (ids, texts, pairs, true labels), order included."""
    digest = hashlib.sha256()
    for row, text, pair, label in zip(rows, texts, pairs, true, strict=True):
        # plain values: a row id read back from parquet is a numpy integer, and its repr differs
        item = (int(row), str(text), None if pair is None or pair != pair else str(pair), str(label))
        digest.update(repr(item).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()[:16]


def _bootstrap(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], seed: int) -> tuple[float, float]:
    """BCa up to BCA_MAX_ROWS rows, percentile above: BCa's jackknife holds rows x rows values
    (2,000 rows took 0.8 s for a comparison, 10,000 would take ~25x that and gigabytes)."""

    def run(method: str) -> Any:
        return stats.bootstrap(
            data,
            statistic,
            paired=True,
            vectorized=True,
            n_resamples=RESAMPLES,
            confidence_level=CONFIDENCE,
            method=method,
            random_state=np.random.default_rng(seed),
        ).confidence_interval

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa's degenerate-data warning: handled below
        ci = run("BCa") if len(data[0]) <= BCA_MAX_ROWS else run("percentile")
        if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
            ci = run("percentile")
    return float(ci.low), float(ci.high)


def _permutation_p(true: np.ndarray, a: np.ndarray, b: np.ndarray, metric: Metric, seed: int) -> float:
    """Paired permutation test: swap the two runs' predictions row by row at random."""

    def statistic(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return metric(true, x, axis) - metric(true, y, axis)

    result = stats.permutation_test(
        (a, b),
        statistic,
        permutation_type="samples",
        vectorized=True,
        n_resamples=RESAMPLES,
        random_state=np.random.default_rng(seed),
    )
    return float(result.pvalue)


# (runs) -> (true, {name: predicted}, metric, metric name): how a task scores its frames
Scoring = Callable[[list[tuple[str, Any]]], tuple[np.ndarray, dict[str, np.ndarray], Metric, str]]


def label_scoring(runs: list[tuple[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray], Metric, str]:
    """A label task's frames as class codes, scored by accuracy (McNemar's test pairs them)."""
    classes = sorted({str(v) for _, frame in runs for v in (*frame["true"], *frame["predicted"])})
    code = {name: i for i, name in enumerate(classes)}
    true = np.array([code[str(v)] for v in runs[0][1]["true"]])
    predicted = {name: np.array([code[str(v)] for v in frame["predicted"]]) for name, frame in runs}
    return true, predicted, accuracy, "accuracy"


def compare_runs(runs: list[tuple[str, Any]], scoring: Scoring | None = None) -> dict[str, Any]:
    """``runs``: (name, evaluation-predictions frame: row, text, pair, true, predicted), two or
    more, all on the same evaluation rows; ``scoring``: the task's (``Task.scoring``; None: a
    label task's accuracy). Each run's score with its interval, then every other run against the
    best: the difference, its interval, the p-value (McNemar's for accuracy, else a paired
    permutation test), Holm-corrected over those comparisons, and the verdict. Raises
    ValueError naming the runs whose evaluation rows differ (they cannot be paired)."""
    if len(runs) < 2:
        raise ValueError("compare needs two runs or more")
    digests = {name: frame_digest(frame) for name, frame in runs}
    first = runs[0][0]
    for name, _ in runs[1:]:
        if digests[name] != digests[first]:
            raise ValueError(
                f"{first} and {name} were evaluated on different rows (digests {digests[first]} and "
                f"{digests[name]}): their scores cannot be paired; evaluate both on the same data"
            )
    true, predicted, metric, metric_name = (scoring or label_scoring)(runs)
    scores = {name: float(metric(true, p, -1)) for name, p in predicted.items()}
    best = max(scores, key=lambda name: scores[name])  # the first of equals
    pairs = [
        (name, compare_pair(true, predicted[name], predicted[best], metric))
        for name, _ in runs
        if name != best
    ]
    adjusted = holm([pair.p_value for _, pair in pairs])
    return {
        "metric": metric_name,
        "eval_rows": len(true),
        "eval_rows_digest": digests[first],
        "runs": [
            {
                "run": name,
                "score": scores[name],
                "score_ci": list(score_interval(true, predicted[name], metric)),
            }
            for name, _ in runs
        ],
        "best": best,
        "correction": "Holm" if len(pairs) > 1 else "none (one comparison)",
        "pairs": [
            {
                "a": name,
                "b": best,
                "delta": pair.delta,
                "delta_ci": list(pair.delta_ci),
                "p_value": pair.p_value,
                "p_adjusted": p,
                "test": pair.test,
                "verdict": verdict(pair.delta, p),
            }
            for (name, pair), p in zip(pairs, adjusted, strict=True)
        ],
    }


def frame_digest(frame: Any) -> str:
    """``rows_digest`` of an evaluation-predictions frame (backend.artifacts.predictions)."""
    pairs = frame["pair"] if "pair" in frame else [None] * len(frame)
    return rows_digest(list(frame["row"]), list(frame["text"]), list(pairs), [str(v) for v in frame["true"]])
