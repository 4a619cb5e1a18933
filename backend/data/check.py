"""Checks on the cells of a loaded table: usable rows and label names.

Which rows have every mapped cell and what each label is called (1, "1" and 1.0 are one
class). Whether the labels suit the task (classes, scores) is the task's check
(``backend.tasks``). Reads no files.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from backend.cells import NUMBER_RE, is_missing, listing, sorted_label_names
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
    # token data: each text is its words joined by single spaces, each name its tags likewise
    sequences: bool = False


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
    if holds_lists(df, mapping):
        texts, names = sequence_rows(df, mapping, keep, source_name)
        return UsableRows(texts, None, names, rows, False, missing, len(df) - len(keep), sequences=True)
    labels = df[mapping.label].tolist()
    names, numeric = normalize_labels([labels[i] for i in keep], rows, source_name, mapping.label)
    texts = _cells(df, mapping.text, keep)
    pairs = _cells(df, mapping.text_pair, keep) if mapping.text_pair else None
    return UsableRows(texts, pairs, names, rows, numeric, missing, len(df) - len(keep))


def holds_lists(df: pd.DataFrame, mapping: ColumnMapping) -> bool:
    """Token data: the text or the label column holds lists (words, tags) in some row."""
    return any(_as_list(v) is not None for c in (mapping.text, mapping.label) for v in df[c].head(1000))


def sequence_rows(
    df: pd.DataFrame, mapping: ColumnMapping, keep: list[int], source: str
) -> tuple[list[str], list[str]]:
    """Each kept row's words and tags, checked and joined by single spaces (a word or tag
    holds no whitespace, so the join is undone by ``split(" ")``)."""
    word_cells, tag_cells = df[mapping.text].tolist(), df[mapping.label].tolist()
    texts, names = [], []
    for i in keep:
        row = i + 1
        words = _listed(word_cells[i], source, row, mapping.text, "words")
        tags = _listed(tag_cells[i], source, row, mapping.label, "tags (one per word)")
        if not words:
            raise DataError(
                f"{source}: row {row} is an empty sentence (no words in '{mapping.text}'); remove it."
            )
        if len(words) != len(tags):
            raise DataError(
                f"{source}: row {row} has {len(words)} words in '{mapping.text}' but {len(tags)} tags in "
                f"'{mapping.label}'; every word needs exactly one tag."
            )
        for kind, items in (("word", words), ("tag", tags)):
            bad = next((x for x in items if not x or any(c.isspace() for c in x)), None)
            if bad is not None:
                raise DataError(
                    f"{source}: row {row}: the {kind} {bad!r} is empty or holds whitespace; a {kind} is one "
                    "token without spaces (split it, or mark the gap with another character)."
                )
        texts.append(" ".join(words))
        names.append(" ".join(tags))
    return texts, names


def _as_list(value: object) -> list[Any] | None:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, np.ndarray):  # Parquet's lists
        return value.tolist()
    return None


def _listed(value: object, source: str, row: int, column: str, what: str) -> list[str]:
    items = _as_list(value)
    if items is None:
        shown = str(value)[:40]
        raise DataError(
            f"{source}: row {row}: column '{column}' holds {type(value).__name__} {shown!r} where a list of "
            f"{what} is expected (token data has a list of words and a list of tags per row)."
        )
    return [_label_text(x) if not isinstance(x, str) else x.strip() for x in items]


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


def _cells(df: pd.DataFrame, column: str, keep: list[int]) -> list[str]:
    values = df[column].tolist()
    return [str(values[i]) for i in keep]


def normalize_labels(
    values: list[Any], rows: list[int], source_name: str, column: str
) -> tuple[list[str], bool]:
    """Label name per row, and whether all are whole numbers (ids then sort as ints).

    1, "1", 1.0 and "1.0" all become "1". Non-whole numbers keep their text ("2.5"): a
    regression target, or an error the classification task words.
    """
    numbers = [_label_number(v) for v in values]
    if not values or any(n is None or (isinstance(n, float) and not n.is_integer()) for n in numbers):
        return [_label_text(v) for v in values], False
    return [str(int(n)) for n in numbers if n is not None], True


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
    """Usable rows per label name, in label-id order (token data: words per tag)."""
    if usable.sequences:
        return dict(Counter(tag for name in usable.names for tag in name.split(" ")).most_common())
    counts = Counter(usable.names)
    return {name: counts[name] for name in sorted_label_names(usable.names, usable.numeric)}
