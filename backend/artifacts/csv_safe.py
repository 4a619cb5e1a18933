"""CSV files for people: cells a spreadsheet would run as a formula are quoted.

A cell starting with ``= + - @`` (or tab / carriage return) is a formula to Excel,
LibreOffice and Sheets, so a crafted text in a dataset could run in whoever opens the
predictions (OWASP "CSV injection"). Such cells get a leading ``'``, which those programs
show as text. Plain numbers ("-2", "+1.5e3") are left alone: they cannot hold a formula,
and labels such as -1/0/1 must survive a round trip.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def escape_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` if a spreadsheet would read it as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_csv(frame: Any, path: str | Path) -> None:
    """``frame`` (a pandas DataFrame) to ``path`` without an index, headers and cells escaped."""
    safe = frame.map(escape_cell) if hasattr(frame, "map") else frame.applymap(escape_cell)
    safe.columns = [escape_cell(str(c)) for c in safe.columns]
    safe.to_csv(path, index=False)
