"""Checks on the cells of a loaded table: usable rows, label names, classes.

Which rows have every mapped cell, what each label is called (1, "1" and 1.0 are one
class), whether there are enough classes and rows per class, and whether an eval
file's labels were seen in training. Reads no files.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from backend.data.cells import MAX_LISTED, NUMBER_RE, is_missing, listing
from backend.data.mapping import ColumnMapping
from backend.errors import DataError

_INT_RE = re.compile(r"[+-]?\d+")


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


def check_usable(
    df: pd.DataFrame,
    mapping: ColumnMapping,
    name: str,
    drop_invalid: bool,
    warnings: list[str],
) -> UsableRows:
    """The usable rows of one file; missing cells are a DataError unless ``drop_invalid``.

    With ``drop_invalid`` each dropped row is counted in a warning appended to ``warnings``.
    """
    usable = usable_rows(df, mapping, name)
    if usable.missing and not drop_invalid:
        raise DataError(
            f"{name}: {usable.dropped} row(s) cannot be used: "
            f"{describe_missing(usable)} (data rows counted from 1 after the header). "
            "Fill in or remove those rows, or allow dropping them (drop_invalid=True)."
        )
    if usable.missing:
        warnings.append(f"{name}: dropped {usable.dropped} row(s): {describe_missing(usable)}.")
    if not usable.rows:
        raise DataError(f"{name}: no usable rows left after dropping invalid ones.")
    return usable


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
        if NUMBER_RE.fullmatch(value):
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


def label_counts(usable: UsableRows) -> dict[str, int]:
    """Usable rows per label name, in label-id order."""
    counts = Counter(usable.names)
    return {name: counts[name] for name in sorted_label_names(usable.names, usable.numeric)}
