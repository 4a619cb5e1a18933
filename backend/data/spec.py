"""``DatasetSpec``: the typed result of reading one data file once.

Everything the app keeps about a file comes from the one DataFrame that was checked:
the SHA-256 of the bytes that were parsed, the resolved column mapping, and the counts
its dataset row stores. ``backend.data.prepare`` makes one per file it reads and hands
them on with the splits, so nothing downstream reads the file again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from backend.data.check import UsableRows, label_counts
from backend.data.limits import check_row_count
from backend.data.mapping import ColumnMapping
from backend.data.read import read_table_with_sha256
from backend.tasks.base import Task


@dataclass(frozen=True)
class DatasetSpec:
    """One data file as it was read and checked: identity, mapping and row counts."""

    path: Path
    sha256: str  # of the bytes that were parsed and checked
    mapping: ColumnMapping
    columns: tuple[str, ...]
    rows: int  # data rows in the file
    invalid_rows: int  # rows with a missing mapped cell (training drops or refuses them)
    # Usable rows per label, in label-id order. Left out of the hash: a dict has none.
    label_counts: dict[str, int] = field(hash=False)

    @property
    def name(self) -> str:
        """The file's name, as messages call it."""
        return self.path.name

    @property
    def label_names(self) -> list[str]:
        """Labels present in the usable rows, in label-id order."""
        return list(self.label_counts)

    @classmethod
    def of(
        cls, path: str | Path, sha256: str, df: pd.DataFrame, mapping: ColumnMapping, usable: UsableRows
    ) -> DatasetSpec:
        """The spec of the table ``df`` read from ``path``, given its usable rows under ``mapping``."""
        columns = tuple(str(c) for c in df.columns)
        return cls(Path(path), sha256, mapping, columns, len(df), usable.dropped, label_counts(usable))


def read_limited(
    path: str | Path, max_rows: int | None, task: Task | None = None
) -> tuple[pd.DataFrame, str]:
    """The table at ``path`` (framed by ``task``: ``read_table``) and the SHA-256 of its bytes;
    over ``max_rows`` rows is a DataError.

    The first checks every data file meets, before its columns are looked at.
    """
    df, sha256 = read_table_with_sha256(path, task)
    check_row_count(len(df), max_rows, Path(path).name)
    return df, sha256
