"""The app's size limits on one dataset: its bytes (before it is read) and its rows (after)."""

from __future__ import annotations

from pathlib import Path

from backend.errors import DataError


def check_file_size(path: str | Path, max_bytes: int | None) -> None:
    """DataError when ``path`` is larger than ``max_bytes``: checked before the file is read.

    A missing file passes: reading it reports that with the usual message.
    """
    p = Path(path)
    if max_bytes is None or not p.is_file() or p.stat().st_size <= max_bytes:
        return
    raise DataError(
        f"{p.name} is {_megabytes(p.stat().st_size)}, over the limit of {_megabytes(max_bytes)} per "
        "dataset; use a sample of the file, or ask whoever runs the app to raise the limit "
        "(WORKBENCH_MAX_UPLOAD_MB or --max-upload-mb)."
    )


def check_row_count(rows: int, max_rows: int | None, source_name: str) -> None:
    """DataError when a table has more than ``max_rows`` data rows."""
    if max_rows is None or rows <= max_rows:
        return
    raise DataError(
        f"{source_name} has {rows:,} rows, over the limit of {max_rows:,} rows per dataset; use a "
        "sample of the file, or ask whoever runs the app to raise the limit "
        "(WORKBENCH_MAX_ROWS or --max-rows)."
    )


def _megabytes(size: int) -> str:
    return f"{size / 2**20:,.1f} MB"
