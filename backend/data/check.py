"""Checks on the cells of a loaded table: usable rows and label names.

Which rows have every mapped cell and what each label is called (1, "1" and 1.0 are one
class). Whether the labels suit the task (classes, scores) is the task's check
(``backend.tasks``). Reads no files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from backend.cells import is_missing, listing
from backend.data.mapping import ColumnMapping
from backend.errors import DataError
from backend.tasks import registry
from backend.tasks.base import Cells, Task


@dataclass
class UsableRows:
    """The rows of one file whose mapped cells are all present; labels as names, as the task
    whose kind of cells the file holds read them (``reader``: ``Task.holds``, ``read_cells``)."""

    texts: list[str]
    pairs: list[str] | None
    names: list[str]
    rows: list[int]  # 1-based data row numbers
    numeric: bool  # every label a whole number: ids sort numerically
    missing: dict[str, list[int]] = field(default_factory=dict)  # problem -> rows
    dropped: int = 0
    reader: Task = field(default_factory=lambda: registry.get(None))


def usable_rows(
    df: pd.DataFrame, mapping: ColumnMapping, source_name: str, named: Task | None = None
) -> UsableRows:
    """Split rows into usable ones and ones with a missing text, pair or label.

    The caller decides whether ``missing`` is an error or a warning. The cells are read by the
    first task whose kind of cells they are (token data: lists of words and tags), the run's
    task (``named``, at its settings) first.
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
    text_cells, label_cells = df[mapping.text].tolist(), df[mapping.label].tolist()
    reader = registry.reader(text_cells[:1000], label_cells[:1000], named)
    pair_cells = df[mapping.text_pair].tolist() if mapping.text_pair else None
    cells = Cells(
        [text_cells[i] for i in keep],
        [pair_cells[i] for i in keep] if pair_cells is not None else None,
        [label_cells[i] for i in keep],
        rows,
        source_name,
        mapping.text,
        mapping.label,
    )
    texts, pairs, names, numeric = reader.read_cells(cells)
    return UsableRows(texts, pairs, names, rows, numeric, missing, len(df) - len(keep), reader)


def check_usable(
    df: pd.DataFrame,
    mapping: ColumnMapping,
    name: str,
    drop_invalid: bool,
    warnings: list[str],
    named: Task | None = None,
) -> UsableRows:
    """The usable rows of one file; missing cells are a DataError unless ``drop_invalid``.

    With ``drop_invalid`` each dropped row is counted in a warning appended to ``warnings``.
    """
    usable = usable_rows(df, mapping, name, named)
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


def label_counts(usable: UsableRows) -> dict[str, int]:
    """Usable rows per label name as a dataset row stores them (token data: words per tag)."""
    return usable.reader.cell_counts(usable.names, usable.numeric)
