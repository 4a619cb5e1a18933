"""Read a user's table file (CSV/TSV/JSONL/JSON/Parquet) into a DataFrame of strings.

Read errors are ``DataError``s that name the file and the line or row, so a user can fix
the file. Nothing is written anywhere.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from backend.cells import column_names, listing
from backend.data.token_files import (
    CONLL_EXTENSIONS,
    TOKEN_EXTENSIONS,
    is_span_table,
    read_conll,
    read_conllu,
    spans_to_tokens,
)
from backend.errors import DataError
from backend.tasks import registry as tasks
from backend.tasks.base import Task

TABLE_EXTENSIONS = (".csv", ".tsv", ".jsonl", ".json", ".parquet")
SUPPORTED_EXTENSIONS = (*TABLE_EXTENSIONS, *TOKEN_EXTENSIONS)  # token files: a word and a tag per line
_EXAMPLE_ROW = '{"text": "...", "label": "..."}'

# The most characters one cell may hold. The models read at most 512 tokens (a few thousand
# characters), so this is far beyond any real text, yet it stops one hostile 400 MB cell from
# costing the web process 35 s and ~6 GB of memory while it is split, copied and measured.
MAX_CELL_CHARS = 1_000_000
# The csv module's default limit (128 KiB) would refuse real long documents; ours is the cap
# above, so that the reader stops at the first oversized cell instead of holding all of it.
csv.field_size_limit(max(csv.field_size_limit(), MAX_CELL_CHARS))


def read_table(path: str | Path, task: Task | None = None) -> pd.DataFrame:
    """Read CSV/TSV/JSONL/JSON/Parquet into a DataFrame of all columns.

    CSV/TSV cells stay strings exactly as written ("NA" and "null" are text).
    Row ``i`` of the frame is data row ``i + 1`` of the file. Raises DataError
    naming the file (and line, where there is one) for every read problem. ``task``: a run's
    task, whose ``frame`` alone applies, at its settings (None: every task's, at its defaults).
    """
    return _read(Path(path), task)[0]


def read_table_with_sha256(path: str | Path, task: Task | None = None) -> tuple[pd.DataFrame, str]:
    """``read_table``, plus the SHA-256 of the very bytes it parsed (``file_sha256``'s value).

    One pass over the file: what was checked and what gets stored are named by one hash.
    """
    df, data = _read(Path(path), task)
    return df, hashlib.sha256(data).hexdigest()


def _read(p: Path, task: Task | None = None) -> tuple[pd.DataFrame, bytes]:
    """The table at ``p`` as the tasks read it (``Task.frame``: columns one assembles from others;
    ``task``'s at its settings, else each task's at its defaults), and the bytes it was parsed from."""
    df, data = _parse(p)
    return tasks.framed(df, p.name, task), data


def _parse(p: Path) -> tuple[pd.DataFrame, bytes]:
    """The table at ``p`` and the bytes it was parsed from."""
    ext = p.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        raise DataError(
            f"{p.name}: unsupported file type '{ext or '(none)'}'; supported: "
            f"{', '.join(SUPPORTED_EXTENSIONS)}. Export the table as UTF-8 CSV."
        )
    data = _read_bytes(p)
    if ext == ".parquet":
        df = _read_parquet(p, data)
    elif ext in (".csv", ".tsv"):
        df = _read_delimited(p, data, "\t" if ext == ".tsv" else ",")
    elif ext == ".jsonl":
        df = _read_jsonl(p.name, _lines(p, data))
    elif ext in CONLL_EXTENSIONS:
        df = read_conll(p.name, _lines(p, data))
    elif ext in TOKEN_EXTENSIONS:
        df = read_conllu(p.name, _decode(p, data))
    else:
        df = _read_json(p, data)
    if ext in (".jsonl", ".json") and len(df) and is_span_table(df):
        df, notes = spans_to_tokens(p.name, df)
        df.attrs["warnings"] = notes  # prepare() passes them on
    if len(df) == 0:
        found = f", only the columns {column_names(df.columns)}" if len(df.columns) else ""
        raise DataError(f"{p.name}: no data rows{found}; add rows with text and labels.")
    _check_cell_sizes(p.name, df)
    return df, data


def _too_long(where: str, chars: int | None = None) -> DataError:
    size = f" has {chars:,} characters" if chars is not None else " is longer than the limit"
    return DataError(
        f"{where}: a cell{size}; the most one cell may hold is {MAX_CELL_CHARS:,} characters. "
        "The models read at most 512 tokens (a few thousand characters), so shorten or split the text."
    )


def _check_cell_sizes(name: str, df: pd.DataFrame) -> None:
    """DataError naming the first row whose cell is over ``MAX_CELL_CHARS`` (JSON, Parquet)."""
    for column in df.columns:
        lengths = df[column].map(lambda v: len(v) if isinstance(v, str) else 0)
        over = lengths[lengths > MAX_CELL_CHARS]
        if len(over):
            row = int(over.index[0]) + 1
            raise _too_long(f"{name}: data row {row}, column {str(column)!r}", int(over.iloc[0]))


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks (datasets can be large)."""
    p = Path(path)
    digest = hashlib.sha256()
    try:
        with p.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise DataError(f"{p}: cannot read the file ({exc.strerror}).") from None
    return digest.hexdigest()


def _read_bytes(p: Path) -> bytes:
    if not p.is_file():
        what = "is a folder, not a file" if p.is_dir() else "file not found"
        raise DataError(f"{p}: {what}; check the path.")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DataError(f"{p}: cannot read the file ({exc.strerror}).") from None
    if not data or data.isspace():  # not data.strip(): that copies the whole file
        size = "0 bytes" if not data else "only whitespace"
        raise DataError(f"{p.name}: the file is empty ({size}); it needs a header and data rows.")
    return data


def _check_text(p: Path, data: bytes) -> None:
    """DataError for a binary file (a NUL byte), naming its line."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise DataError(
            f"{p.name}: looks like a binary file, not text (NUL byte on line "
            f"{line}); save the table as UTF-8 CSV/TSV/JSON Lines, or as Parquet."
        )


def _text_stream(p: Path, data: bytes, newline: str = "") -> io.TextIOWrapper:
    """The file's text, decoded as it is read: no second copy of a large file in memory.
    A decoding error surfaces while reading it; ``_decode`` then says where. ``newline``:
    "" for the csv module (its own rule), "\n" to split lines at line feeds only."""
    _check_text(p, data)
    # -sig: Excel's "CSV UTF-8" starts with a BOM.
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=newline)


def _lines(p: Path, data: bytes) -> list[tuple[int, str]]:
    """(line number, line) of each line (split on "\n" only: U+2028 may sit in a JSON string)."""
    try:
        return [(n, line) for n, line in enumerate(_text_stream(p, data, "\n"), start=1)]
    except UnicodeDecodeError:
        _decode(p, data)  # raises with the line of the first bad byte
        raise


def _decode(p: Path, data: bytes) -> str:
    _check_text(p, data)
    try:
        return data.decode("utf-8-sig")  # -sig: Excel's "CSV UTF-8" starts with a BOM
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"{p.name}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
            "save the file with UTF-8 encoding."
        ) from None


def _read_delimited(p: Path, data: bytes, delimiter: str) -> pd.DataFrame:
    """A CSV/TSV file, read as it is decoded, into columns of strings.

    The csv module rather than pandas: it knows where each record starts, so short rows
    (which pandas silently pads with NaN) get exact line numbers. Cells go straight into one
    list per column: no copy of the whole text and no list per row (an upload near the limit
    took 6x its size in memory when both were held).
    """
    try:
        return _columns_of(p.name, _text_stream(p, data), delimiter)
    except UnicodeDecodeError:
        _decode(p, data)  # raises with the line of the first bad byte
        raise


def _columns_of(name: str, stream: io.TextIOWrapper, delimiter: str) -> pd.DataFrame:
    reader = csv.reader(stream, delimiter=delimiter, strict=True)
    header: list[str] | None = None
    columns: list[list[str]] = []
    ragged: list[tuple[int, int, int]] = []  # (line, data row, fields)
    line, row = 1, 0
    try:
        for fields in reader:
            start, line = line, reader.line_num + 1
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line, as pandas skips them
            if header is None:
                header = _header(name, fields, delimiter)
                columns = [[] for _ in header]
                continue
            row += 1
            if len(fields) != len(header):
                ragged.append((start, row, len(fields)))
                continue
            for column, cell in zip(columns, fields, strict=True):
                column.append(cell)
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise _too_long(f"{name}: line {line}") from None
        raise DataError(
            f"{name}: line {line}: malformed quoting ({exc}); a field with quotes, "
            "separators or line breaks must be wrapped in double quotes, with any "
            "quote inside it doubled."
        ) from None
    assert header is not None  # _read_bytes rejected whitespace-only files
    if ragged:
        _raise_ragged(name, ragged, header, delimiter)
    frame = pd.DataFrame(dict(zip(header, columns, strict=True)), dtype=object)
    return frame


def _header(name: str, record: list[str], delimiter: str) -> list[str]:
    header = [cell.strip() or f"column_{i + 1}" for i, cell in enumerate(record)]
    if len(header) == 1:
        for other in [d for d in (",", "\t", ";", "|") if d != delimiter]:
            if other in header[0]:
                raise DataError(
                    f"{name}: the header is one column {header[0]!r}; the file "
                    f"seems to be separated by {other!r}. Save it comma-separated "
                    "(.csv) or tab-separated (.tsv)."
                )
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise DataError(f"{name}: duplicate column name(s) in the header: {column_names(dupes)}.")
    return header


def _raise_ragged(name: str, ragged: list[tuple[int, int, int]], header: list[str], delimiter: str) -> None:
    line, row, count = ragged[0]
    sep = "tab" if delimiter == "\t" else repr(delimiter)
    more = ""
    if len(ragged) > 1:
        lines = listing([r[0] for r in ragged[1:]])
        more = f" ({len(ragged) - 1} more such row(s), on lines {lines})"
    raise DataError(
        f"{name}: line {line} (data row {row}) has {count} field(s) but the header has "
        f"{len(header)} ({column_names(header)}){more}. A text containing a {sep} must be "
        "wrapped in double quotes; every row needs a value for every column."
    )


def _read_jsonl(name: str, lines: list[tuple[int, str]]) -> pd.DataFrame:
    records: list[dict[str, Any]] = []
    for number, line in lines:
        if not line.strip():
            continue
        obj = _loads(name, line, first_line=number)
        records.append(_row_object(name, f"line {number}", obj))
    return pd.DataFrame(records, dtype=object)


def _read_json(p: Path, data: bytes) -> pd.DataFrame:
    """A .json file: an array of objects, or JSON Lines under a .json name."""
    name, text = p.name, _decode(p, data)
    if not text.lstrip().startswith("["):
        try:
            return _read_jsonl(name, _lines(p, data))
        except DataError:
            if isinstance(_try_json(text), dict):
                raise DataError(
                    f"{name}: holds a single JSON object; expected an array of row "
                    'objects ([{"text": ..., "label": ...}, ...]) or JSON Lines (one '
                    "object per line)."
                ) from None
            raise
    items = _loads(name, text, first_line=1)
    rows = [_row_object(name, f"array item {i}", x) for i, x in enumerate(items, 1)]
    return pd.DataFrame(rows, dtype=object)


def _loads(name: str, text: str, *, first_line: int) -> Any:
    try:
        return json.loads(text)
    except RecursionError:  # json's C scanner stops at the interpreter's limit: ~1,000 levels
        raise DataError(f"{name}: line {first_line}: JSON nested too deeply to be a table row.") from None
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{name}: not valid JSON at line {first_line + exc.lineno - 1}, column "
            f"{exc.colno} ({exc.msg}); rows must be objects like {_EXAMPLE_ROW}."
        ) from None


def _row_object(name: str, where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataError(
            f"{name}: {where} is a JSON {type(value).__name__}, not an object; "
            f"each row must be an object like {_EXAMPLE_ROW}."
        )
    return value


def _try_json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _read_parquet(p: Path, data: bytes) -> pd.DataFrame:
    if len(data) < 12 or data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        raise DataError(
            f"{p.name}: not a Parquet file (no PAR1 marker); re-export it as "
            "Parquet or save the table as CSV."
        )
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for bad files
        raise DataError(f"{p.name}: cannot read this Parquet file ({exc}).") from None
