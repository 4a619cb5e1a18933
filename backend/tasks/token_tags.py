"""A token task's outputs read as tags: per-word predictions, gold tags, entities, per-tag scores.

Outputs are (sentences, words, tags) probabilities with NaN past each sentence's end; targets
are (sentences, words) tag ids with ``IGNORE`` there.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backend.tasks import tag_schemes as ts

IGNORE = -100  # transformers' "no label here": sub-words after a word's first, special tokens


def scheme_of(label_names: list[str]) -> str:
    return ts.detect([label_names])  # IOB1 was made IOB2 on reading, so the tag set tells


def predicted_tags(outputs: np.ndarray, label_names: list[str]) -> list[list[str]]:
    """Each sentence's predicted tags (its words: the positions that are not NaN)."""
    words = ~np.isnan(outputs).any(-1)
    best = np.nan_to_num(outputs).argmax(-1)
    return [[label_names[t] for t in best[i][words[i]]] for i in range(len(outputs))]


def entity_dicts(found: set[tuple[str, int, int]]) -> list[dict[str, Any]]:
    """Entities in word order as records: type, first word, end (exclusive)."""
    return [{"type": k, "start": s, "end": e} for k, s, e in sorted(found, key=lambda x: x[1])]


def spans(tags: list[list[str]], label_names: list[str]) -> list[list[dict[str, Any]]]:
    """Each sentence's entities in word order: type, first word, end (exclusive)."""
    found = ts.entities(tags, scheme_of(label_names))
    return [entity_dicts(f) for f in found]


def word_tags(
    true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None
) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted tags per sentence (tag ids as text when no names are given)."""
    names = label_names or [str(i) for i in range(outputs.shape[-1])]
    best = np.nan_to_num(outputs).argmax(-1)
    gold = [[names[t] for t in row[row != IGNORE]] for row in true]
    predicted = [[names[t] for t in best[i][: len(gold[i])]] for i in range(len(gold))]
    return gold, predicted


def per_tag(words: list[tuple[str, str]], label_names: list[str]) -> dict[str, dict[str, float]]:
    from sklearn.metrics import precision_recall_fscore_support

    gold, predicted = [g for g, _ in words], [p for _, p in words]
    p, r, f, s = precision_recall_fscore_support(gold, predicted, labels=label_names, zero_division=0)
    return {n: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
            for i, n in enumerate(label_names)}  # fmt: skip
