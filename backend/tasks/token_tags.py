"""A token task's outputs read as tags: per-word predictions, gold tags, entities, per-tag scores.

Outputs are (sentences, words, tags) probabilities with NaN past each sentence's end; targets
are (sentences, words) tag ids with ``IGNORE`` there.
"""

from __future__ import annotations

import json
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


def first_subword_labels(word_ids: list[int | None], tags: list[int]) -> list[int]:
    """A row's labels per token: each word's tag on its first sub-word, ``IGNORE`` on the
    other sub-words and the special tokens."""
    labels, seen = [], set()
    for word in word_ids:
        labels.append(tags[word] if word is not None and word not in seen else IGNORE)
        if word is not None:
            seen.add(word)
    return labels


def pad_outputs(rows: list[np.ndarray], targets: list[Any]) -> np.ndarray:
    """(sentences, most words, tags): a truncated word's outputs are 0 (read as tag 0, "O"),
    the positions past a sentence's end NaN."""
    width = max((len(t) for t in targets), default=0)
    classes = next((r.shape[-1] for r in rows if r.ndim == 2), 1)
    out = np.full((len(rows), width, classes), np.nan, dtype=np.float32)
    for i, (row, tags) in enumerate(zip(rows, targets, strict=True)):
        row = row[: len(tags)]  # rows that were stacked before: NaN past the sentence
        out[i, : len(tags)] = 0.0
        out[i, : len(row)] = row
    return out


def pad_targets(targets: list[Any]) -> np.ndarray:
    """(sentences, most words) tag ids, ``IGNORE`` past each sentence's end."""
    width = max((len(t) for t in targets), default=0)
    out = np.full((len(targets), width), IGNORE, dtype=np.int64)
    for i, tags in enumerate(targets):
        out[i, : len(tags)] = tags
    return out


def sentence_frame(gold: list[list[str]], predicted: list[list[str]], scheme: str) -> dict[str, Any]:
    """The evaluation-predictions file's columns of a token task (``Task.frame_columns``)."""
    gold_spans, predicted_spans = ts.entities(gold, scheme), ts.entities(predicted, scheme)
    pairs = list(zip(gold, predicted, strict=True))
    if scheme == ts.PLAIN:  # a wrong word is the error
        errors = [sum(g != p for g, p in zip(gs, ps, strict=True)) for gs, ps in pairs]
    else:
        errors = [len(g ^ p) for g, p in zip(gold_spans, predicted_spans, strict=True)]
    return {
        "true": [" ".join(t) for t in gold],
        "predicted": [" ".join(t) for t in predicted],
        "correct": [g == p for g, p in pairs],
        "errors": errors,
        "true_entities": [json.dumps(entity_dicts(f)) for f in gold_spans],
        "predicted_entities": [json.dumps(entity_dicts(f)) for f in predicted_spans],
        "plain": [scheme == ts.PLAIN] * len(gold),
    }
