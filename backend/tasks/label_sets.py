"""Reading label sets (the multi-label task's cells): a list per row, names joined by a separator,
or one 0/1 column per label. Each reader says what is wrong with a file in one DataError that
names the row and the column.

A row's set is kept as the JSON list of its names, sorted (``as_cell``): one string per row, as
every task's rows hold their label, that no label name can make ambiguous.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd

from backend.cells import as_list, column_names, label_number, label_text, listing
from backend.errors import DataError

SEPARATORS = (";", "|", ",")  # tried in this order: a name holds a comma more often than a ";"
MAX_NAME_WORDS = 5  # a part longer than this is prose, not a label name: not a separator then
DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")  # "2,5": a number written with a decimal comma
SET_COLUMN_NAMES = ("labels", "label_set", "labels_")  # the column the 0/1 columns become


def as_cell(names: list[str]) -> str:
    """A row's label set as its one stored string."""
    return json.dumps(sorted(set(names)), ensure_ascii=False)


def of_cell(cell: str) -> list[str]:
    """A stored row's label set (``as_cell``'s inverse)."""
    return list(json.loads(cell)) if cell else []


def detect_separator(cells: list[Any]) -> str | None:
    """The separator a sample of label cells joins names with, or None: the first of
    ``SEPARATORS`` some cell holds whose parts are short names that either also stand alone in
    other rows, or recur across rows (a file where every row has two or more labels).
    "Austin, TX"-style classes (each part new) and prose do not qualify."""
    texts = [c.strip() for c in cells if isinstance(c, str)]
    alone = {t for t in texts if not any(s in t for s in SEPARATORS)}
    for sep in SEPARATORS:
        joined = [t for t in texts if sep in t]
        if not joined or (sep == "," and all(DECIMAL_COMMA.fullmatch(t) for t in joined)):
            continue
        parts = [p.strip() for t in joined for p in t.split(sep)]
        named = {p for p in parts if p}
        if not named or any(len(p.split()) > MAX_NAME_WORDS for p in named):
            continue
        if len(named & alone) * 2 >= len(named) or len(named) * 2 <= len(parts):
            return sep
    return None


def read_set(cell: Any, separator: str | None, where: str) -> list[str]:
    """One label cell's names: a list's items, or a text split by ``separator`` (None: the text
    is one name). An empty name is a DataError (``where``: "source: row N, column 'c'")."""
    items = as_list(cell)
    if items is not None:
        names = [x.strip() if isinstance(x, str) else label_text(x) for x in items]
        if any(not n for n in names):
            raise DataError(f"{where}: the list {items!r} holds an empty label name; remove it.")
        return names
    text = label_text(cell)
    if separator is None:
        return [text]
    names = [p.strip() for p in text.split(separator)]
    if any(not n for n in names):
        raise DataError(
            f"{where}: {text!r} has an empty label name next to the separator {separator!r} (two "
            "separators in a row, or one at an end); remove the extra separator, or choose another "
            "separator (--label-separator) if this one is part of a name."
        )
    return names


def binary_columns(df: pd.DataFrame) -> list[str]:
    """The columns that hold only 0 and 1 (numbers, "0"/"1" or booleans) in every row."""
    return [str(c) for c in df.columns if len(df) and _zero_one(df[c]) is None]


def assemble(df: pd.DataFrame, columns: list[str], source: str) -> pd.DataFrame:
    """The table with one 0/1 column per label (``columns``) made one column of label sets
    (lists of the columns' names), placed where the first was; every column must exist and
    hold only 0 and 1, else a DataError that names it."""
    have = [str(c) for c in df.columns]
    missing = [c for c in columns if c not in have]
    if missing:
        raise DataError(
            f"{source}: the label columns (--label-columns) name {listing([repr(c) for c in missing])}, "
            f"which the file does not have; its columns: {column_names(df.columns)}."
        )
    for column in columns:
        bad = _zero_one(df[column])
        if bad is not None:
            row, value = bad
            raise DataError(
                f"{source}: the label column '{column}' holds {value!r} in row {row}; a label column "
                "holds only 0 and 1 (1: the row has that label). Fix the value, or leave the column "
                "out of the label columns."
            )
    name = next(n for n in SET_COLUMN_NAMES if n not in have or n in columns)
    sets = [[c for c in columns if _is_one(df[c].iloc[i])] for i in range(len(df))]
    position = min(have.index(c) for c in columns)
    out = df.drop(columns=columns)
    out.insert(position, name, pd.Series(sets, index=df.index, dtype=object))
    out.attrs = dict(df.attrs)
    return out


def _is_one(value: Any) -> bool:
    return bool(value) if isinstance(value, bool) else label_number(value) == 1


def _zero_one(series: pd.Series) -> tuple[int, Any] | None:
    """The first row (1-based) and value of ``series`` that is not 0 or 1; None when all are."""
    for i, value in enumerate(series.tolist()):
        if isinstance(value, bool):
            continue
        if label_number(value) not in (0, 1):  # a blank cell (NaN, None) is not 0 either
            return i + 1, value
    return None
