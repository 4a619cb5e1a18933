"""Checks and statistics over the cells of a loaded table.

``data`` reads files, maps columns and builds the splits; this module looks at
values: which rows are usable, what the label names are, how many rows each
class has, a stratified sample of row indices, and the summaries the UI shows.
It reads no files and never imports ``data`` at run time (no import cycle).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from backend.errors import DataError

if TYPE_CHECKING:
    from backend.data.prepare import ColumnMapping

MAX_LISTED = 10
PREVIEW_ROWS = 5
PERCENTILES = (50, 90, 95, 99)
HISTOGRAM_BINS = 20
# Token lengths of at most this many rows (a seeded sample): tokenizing a million-row file
# would hold the web request for minutes, and 2,000 rows pin the percentiles well enough.
TOKEN_SAMPLE_ROWS = 2_000
_INT_RE = re.compile(r"[+-]?\d+")
_NUMBER_RE = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


@dataclass
class UsableRows:
    """The rows of one file whose mapped cells are all present; labels as names."""

    texts: list[str]
    pairs: list[str] | None
    names: list[str]
    rows: list[int]  # 1-based data row numbers
    numeric: bool  # every label a whole number: ids sort numerically
    missing: dict[str, list[int]] = field(default_factory=dict)  # problem -> rows
    dropped: int = 0


def is_missing(value: object) -> bool:
    """None, NaN/NA, or a string that is empty or only whitespace."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return isinstance(value, str) and not value.strip()


def looks_numeric(value: str) -> bool:
    """True for strings like "3", "-0.5", "1e3" (ids and scores, not free text)."""
    return _NUMBER_RE.fullmatch(value.strip()) is not None


def listing(numbers: list[Any]) -> str:
    """The first MAX_LISTED items joined by commas, then "…" if there are more."""
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    return shown + (", …" if len(numbers) > MAX_LISTED else "")


def usable_rows(df: pd.DataFrame, mapping: ColumnMapping, source_name: str) -> UsableRows:
    """Split rows into usable ones and ones with a missing text, pair or label.

    The caller decides whether ``missing`` is an error or a warning.
    """
    roles = {"text": mapping.text, "label": mapping.label}
    if mapping.text_pair:
        roles["second text"] = mapping.text_pair
    missing: dict[str, list[int]] = {}
    keep: list[int] = []
    for index, cells in enumerate(df[list(roles.values())].itertuples(index=False)):
        absent = [role for role, value in zip(roles, cells, strict=True) if is_missing(value)]
        for role in absent:
            missing.setdefault(f"missing {role} in column '{roles[role]}'", []).append(index + 1)
        if not absent:
            keep.append(index)
    rows = [i + 1 for i in keep]
    labels = df[mapping.label].tolist()
    names, numeric = normalize_labels([labels[i] for i in keep], rows, source_name, mapping.label)
    texts = _cells(df, mapping.text, keep)
    pairs = _cells(df, mapping.text_pair, keep) if mapping.text_pair else None
    return UsableRows(texts, pairs, names, rows, numeric, missing, len(df) - len(keep))


def describe_missing(usable: UsableRows) -> str:
    """E.g. "missing text in column 'text' (rows 4, 9); missing label ... (row 12)"."""
    parts = []
    for problem, rows in usable.missing.items():
        where = f"row {rows[0]}" if len(rows) == 1 else f"rows {listing(rows)}"
        parts.append(f"{problem} ({where})")
    return "; ".join(parts)


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


def _cells(df: pd.DataFrame, column: str, keep: list[int]) -> list[str]:
    values = df[column].tolist()
    return [str(values[i]) for i in keep]


# ---------------------------------------------------------------- labels


def normalize_labels(
    values: list[Any], rows: list[int], source_name: str, column: str
) -> tuple[list[str], bool]:
    """Label name per row, and whether all are whole numbers (ids then sort as ints).

    1, "1", 1.0 and "1.0" all become "1". Non-whole numbers mean a regression
    target, which is rejected with the first offending row.
    """
    numbers = [_label_number(v) for v in values]
    if not values or any(n is None for n in numbers):
        return [_label_text(v) for v in values], False
    for number, row in zip(numbers, rows, strict=True):
        if isinstance(number, float) and not number.is_integer():
            raise DataError(
                f"{source_name}: column '{column}' holds non-whole numbers (e.g. "
                f"{number} in row {row}); that looks like regression, which is not "
                "supported. Use class labels: whole numbers or names."
            )
    return [str(int(n)) for n in numbers if n is not None], True


def sorted_label_names(names: list[str], numeric: bool) -> list[str]:
    """Distinct label names in their stable id order (numeric, else lexicographic)."""
    return sorted(set(names), key=int if numeric else None)


def _label_number(value: object) -> int | float | None:
    if isinstance(value, (bool, np.bool_)):
        return None  # true/false are class names, not 1/0
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        value = value.strip()
        if _INT_RE.fullmatch(value):
            return int(value)  # not via float(): that would round long ids
        if _NUMBER_RE.fullmatch(value):
            return float(value)
    return None


def _label_text(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = _label_number(value)
        if isinstance(number, float) and number.is_integer():
            return str(int(number))
        return str(number)
    return str(value).strip()


# ---------------------------------------------------------------- sampling


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


# ---------------------------------------------------------------- summaries


def summarize(
    df: pd.DataFrame,
    mapping: ColumnMapping,
    source_name: str,
    tokenizer: Any = None,
    token_sample: int = TOKEN_SAMPLE_ROWS,
) -> dict[str, Any]:
    """The UI's overview of a table; ``data.dataset_stats`` documents the keys.

    Label counts and lengths cover usable rows only, i.e. what training sees
    once invalid rows are dropped. Token lengths cover a seeded sample of at most
    ``token_sample`` of them (``token_lengths_sampled`` says how many when it is one).
    """
    usable = usable_rows(df, mapping, source_name)
    counts = Counter(usable.names)
    char_lengths = [len(t) for t in usable.texts]
    if usable.pairs is not None:
        char_lengths = [n + len(p) for n, p in zip(char_lengths, usable.pairs, strict=True)]
    preview = df.head(PREVIEW_ROWS).to_dict("records")
    picked = sample_indices(len(usable.texts), token_sample)
    texts = [usable.texts[i] for i in picked]
    pairs = None if usable.pairs is None else [usable.pairs[i] for i in picked]
    token_lengths = _token_lengths(tokenizer, texts, pairs)
    # How many rows the token lengths come from when that is a sample; None: from every row.
    sampled = len(picked) if token_lengths is not None and len(picked) < len(usable.texts) else None
    return {
        "rows": len(df),
        "columns": [str(c) for c in df.columns],
        "mapping": {
            "text": mapping.text,
            "text_pair": mapping.text_pair,
            "label": mapping.label,
        },
        "label_counts": {n: counts[n] for n in sorted_label_names(usable.names, usable.numeric)},
        "invalid_rows": usable.dropped,
        "preview": [{str(k): _plain(v) for k, v in row.items()} for row in preview],
        "char_length": length_summary(char_lengths),
        "token_length": None if token_lengths is None else length_summary(token_lengths),
        # Bins, not the raw lengths: the UI draws a histogram without shipping every row.
        "token_histogram": None if token_lengths is None else histogram(token_lengths),
        "token_lengths_sampled": sampled,
    }


def sample_indices(total: int, limit: int, seed: int = 0) -> list[int]:
    """Sorted indices of a seeded sample of ``limit`` of ``total`` rows (all when fewer)."""
    if total <= limit:
        return list(range(total))
    return sorted(int(i) for i in np.random.default_rng(seed).choice(total, size=limit, replace=False))


def length_summary(lengths: list[int]) -> dict[str, int]:
    """p50/p90/p95/p99/max of lengths; observed values ("higher"), so all ints."""
    if not lengths:
        return {**{f"p{q}": 0 for q in PERCENTILES}, "max": 0}
    values = np.asarray(lengths)
    summary = {f"p{q}": int(np.percentile(values, q, method="higher")) for q in PERCENTILES}
    summary["max"] = int(values.max())
    return summary


def _token_lengths(tokenizer: Any, texts: list[str], pairs: list[str] | None) -> list[int] | None:
    """Tokens per usable row (None without a tokenizer)."""
    if tokenizer is None:
        return None
    if not texts:
        return []
    # verbose=False: no "longer than the model maximum" warning; that is what we measure
    encoded = tokenizer(texts, pairs, truncation=False, verbose=False)
    return [len(ids) for ids in encoded["input_ids"]]


def histogram(lengths: list[int], bins: int = HISTOGRAM_BINS) -> list[dict[str, int]]:
    """Counts of ``lengths`` in at most ``bins`` equal integer-width bins.

    Each bin is {start, end, count} with ``end`` exclusive; empty bins are kept so a
    chart shows the gaps.
    """
    if not lengths:
        return []
    low, high = min(lengths), max(lengths)
    width = max(1, math.ceil((high - low + 1) / bins))
    counts = Counter((n - low) // width for n in lengths)
    return [
        {"start": low + i * width, "end": low + (i + 1) * width, "count": counts.get(i, 0)}
        for i in range((high - low) // width + 1)
    ]


def _plain(value: object) -> object:
    """A JSON-friendly preview cell: numpy scalars unwrapped, NaN/NA -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, str) and is_missing(value):
        return None
    return value
