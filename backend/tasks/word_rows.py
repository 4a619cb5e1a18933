"""A per-token task seen one word at a time, as a probe head trains it.

A probe's features are one vector per word (its first sub-word's, at one layer), so its head
trains and is searched like a classifier of words: cross-entropy per word, the learning-rate
search and the layer choice on held-out words. Its evaluation, though, is the token task's:
the words are put back into their sentences, and the metrics (entity F1 by seqeval, word
accuracy), the baseline and early stopping are the sentence-level ones every other method of
the run reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from backend.tasks.base import Task
from backend.tasks.classification import Classification


class WordRows(Classification):
    def __init__(
        self, task: Task, train: list[list[int]], evaluation: list[list[int]], kept: list[int]
    ) -> None:
        """``train``/``evaluation``: the sentences' tag ids; ``kept``: how many words of each
        evaluation sentence have a feature (the rest were cut by the length limit)."""
        self.task, self.train_targets, self.eval_targets, self.kept = task, train, evaluation, kept
        self.key, self.primary_metric, self.headline = task.key, task.primary_metric, task.headline

    def pack(self, outputs: np.ndarray) -> np.ndarray:
        """Per-word outputs of the evaluation words, as the token task's (sentences, words, tags)."""
        bounds = np.cumsum([0, *self.kept])
        rows = [outputs[bounds[i] : bounds[i + 1]] for i in range(len(self.kept))]
        return self.task.stack(rows, self.eval_targets)

    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        return self.task.metrics(self.task.truth(self.eval_targets), self.pack(outputs), label_names)

    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        return self.task.baseline(self.train_targets, self.eval_targets, label_names)

    def epoch_text(self, metrics: dict[str, Any]) -> str:
        return self.task.epoch_text(metrics)

    def headline_of(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return self.task.headline_of(metrics)
