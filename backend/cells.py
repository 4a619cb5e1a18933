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
