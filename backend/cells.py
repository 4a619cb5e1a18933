"""What a single cell holds, and how to list cells and columns in a message.

The bottom of ``backend.data``: every other module may use these; this one imports
none of them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

MAX_LISTED = 10
NUMBER_RE = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
INT_RE = re.compile(r"[+-]?\d+")


def is_missing(value: object) -> bool:
    """None, NaN/NA, or a string that is empty or only whitespace."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, (float, np.floating)):
        return bool(np.isnan(value))
    return isinstance(value, str) and not value.strip()


def sorted_label_names(names: list[str], numeric: bool) -> list[str]:
    """Distinct label names in their stable id order (numeric, else lexicographic)."""
    return sorted(set(names), key=int if numeric else None)


def looks_numeric(value: str) -> bool:
    """True for strings like "3", "-0.5", "1e3" (ids and scores, not free text)."""
    return NUMBER_RE.fullmatch(value.strip()) is not None


def listing(numbers: list[Any]) -> str:
    """The first MAX_LISTED items joined by commas, then "…" if there are more."""
    shown = ", ".join(str(n) for n in numbers[:MAX_LISTED])
    return shown + (", …" if len(numbers) > MAX_LISTED else "")


def column_names(columns: Any) -> str:
    """Columns as a readable list for error messages."""
    return ", ".join(repr(str(c)) for c in columns) or "(none)"


def as_list(value: object) -> list[Any] | None:
    """A cell that holds a list (JSON's, Parquet's arrays) as a list; None for any other cell."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, np.ndarray):  # Parquet's lists
        return value.tolist()
    return None


def normalize_labels(
    values: list[Any], rows: list[int], source_name: str, column: str
) -> tuple[list[str], bool]:
    """Label name per row, and whether all are whole numbers (ids then sort as ints).

    1, "1", 1.0 and "1.0" all become "1". Non-whole numbers keep their text ("2.5"): a
    regression target, or an error the classification task words.
    """
    numbers = [label_number(v) for v in values]
    if not values or any(n is None or (isinstance(n, float) and not n.is_integer()) for n in numbers):
        return [label_text(v) for v in values], False
    return [str(int(n)) for n in numbers if n is not None], True


def label_number(value: object) -> int | float | None:
    if isinstance(value, (bool, np.bool_)):
        return None  # true/false are class names, not 1/0
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, str):
        value = value.strip()
        if INT_RE.fullmatch(value):
            return int(value)  # not via float(): that would round long ids
        if NUMBER_RE.fullmatch(value):
            return float(value)
    return None


def label_text(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, float, np.integer, np.floating)):
        number = label_number(value)
        if isinstance(number, float) and number.is_integer():
            return str(int(number))
        return str(number)
    return str(value).strip()
