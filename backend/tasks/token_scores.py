"""A token task's score from per-sentence counts, so that a sentence is the unit resampled.

Entity F1 (micro) is 2·Σ right / (Σ predicted + Σ gold) over sentences, and word accuracy is
Σ right / Σ words: both are ratios of sums of per-sentence counts. A sentence's counts are
packed in one integer array (``predicted`` = right · BASE + predicted; ``true`` = gold) so
``backend.significance`` resamples and pairs them like any other rows: its bootstrap interval
and paired permutation test then move whole sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backend.tasks import tag_schemes as ts

BASE = 1 << 20  # more entities or words than this in one sentence would not fit its count


@dataclass(frozen=True)
class SentenceCounts:
    true: np.ndarray  # gold entities (words, for plain tags) per sentence
    predicted: np.ndarray  # right · BASE + predicted entities (words) per sentence

    @classmethod
    def of(cls, gold: list[list[str]], predicted: list[list[str]], scheme: str | None) -> SentenceCounts:
        """``scheme`` None: plain words (word accuracy)."""
        scheme = scheme or ts.PLAIN
        if scheme == ts.PLAIN:
            right = [
                sum(g == p for g, p in zip(gs, ps, strict=True))
                for gs, ps in zip(gold, predicted, strict=True)
            ]
            true = np.array([len(g) for g in gold], dtype=np.int64)
            return cls(true, np.array(right, dtype=np.int64) * BASE + true)
        gold_spans, predicted_spans = ts.entities(gold, scheme), ts.entities(predicted, scheme)
        right = np.array(
            [len(g & p) for g, p in zip(gold_spans, predicted_spans, strict=True)], dtype=np.int64
        )
        found = np.array([len(p) for p in predicted_spans], dtype=np.int64)
        return cls(np.array([len(g) for g in gold_spans], dtype=np.int64), right * BASE + found)


def counts_metric(true: np.ndarray, predicted: np.ndarray, axis: int = -1) -> np.ndarray:
    """F1 over sentences (word accuracy when predicted = gold = words), vectorized along ``axis``
    for the bootstrap; 0 where there is nothing to score."""
    right, found = np.divmod(np.asarray(predicted), BASE)
    numerator = 2.0 * right.sum(axis=axis)
    denominator = (found + np.asarray(true)).sum(axis=axis).astype(float)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def ratio_interval(counts: SentenceCounts) -> tuple[float, float]:
    """The score's 95% interval by a bootstrap over sentences."""
    from backend.significance import score_interval

    return score_interval(counts.true, counts.predicted, counts_metric)
