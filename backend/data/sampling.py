"""Seeded, stratified samples of row indices: the eval split, train limits, token samples.

Pure functions of labels and a seed, so a run's split is the same wherever it is made.
"""

from __future__ import annotations

import math

import numpy as np


def eval_indices(labels: list[int], fraction: float, seed: int) -> list[int]:
    """Sorted indices of a stratified, seeded eval sample of about ``fraction`` of rows.

    Every class gets at least one eval row and keeps one for training (the
    caller has checked each class has 2+), so the size may grow past the fraction.
    """
    n, classes = len(labels), len(set(labels))
    # round() first: 0.1 * 30 is 3.0000000000000004, which ceil would make 4
    size = min(max(math.ceil(round(fraction * n, 9)), classes), n - classes)
    return stratified_sample(labels, size, low=1, keep=1, seed=seed)


def stratified_sample(labels: list[int], total: int, *, low: int, keep: int, seed: int) -> list[int]:
    """Sorted indices of a seeded sample of ``total`` rows, stratified by label.

    Each class gets at least ``low`` picked rows and keeps at least ``keep``
    unpicked; the caller makes sure ``total`` allows both. sklearn's
    ``train_test_split(stratify=...)`` is not used: its rounding can leave a
    small class with no eval row at all.
    """
    members: dict[int, list[int]] = {}
    for index, label in enumerate(labels):
        members.setdefault(label, []).append(index)
    classes = sorted(members)
    counts = [len(members[c]) for c in classes]
    quota = _allocate(counts, total, [min(low, n) for n in counts], [n - keep for n in counts])
    rng = np.random.default_rng(seed)
    picked: list[int] = []
    for label, take in zip(classes, quota, strict=True):
        order = rng.permutation(len(members[label]))[:take]
        picked.extend(members[label][j] for j in order)
    return sorted(picked)


def _allocate(counts: list[int], total: int, low: list[int], high: list[int]) -> list[int]:
    """Largest-remainder split of ``total`` in proportion to ``counts``.

    Each share stays within its [low, high] bounds.
    """
    ideal = [total * c / sum(counts) for c in counts]
    quota = [min(max(int(q), lo), hi) for q, lo, hi in zip(ideal, low, high, strict=True)]
    classes = range(len(counts))
    while sum(quota) < total:  # give to the class furthest below its ideal share
        grow = [i for i in classes if quota[i] < high[i]]
        quota[max(grow, key=lambda i: (ideal[i] - quota[i], -i))] += 1
    while sum(quota) > total:  # take from the class furthest above it
        shrink = [i for i in classes if quota[i] > low[i]]
        quota[min(shrink, key=lambda i: (ideal[i] - quota[i], i))] -= 1
    return quota


def sample_indices(total: int, limit: int, seed: int = 0) -> list[int]:
    """Sorted indices of a seeded sample of ``limit`` of ``total`` rows (all when fewer)."""
    if total <= limit:
        return list(range(total))
    return sorted(int(i) for i in np.random.default_rng(seed).choice(total, size=limit, replace=False))
