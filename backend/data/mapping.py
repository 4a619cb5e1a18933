"""Which columns of a table hold the text, the optional second text and the label.

Detected by name (case-insensitive), or chosen by the user; a lone column of free text
counts as the text even when its name says nothing. Reads no files.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from backend.cells import column_names, is_missing, looks_numeric
from backend.errors import DataError
from backend.tasks import registry as tasks

# The names that find each column, from the tasks' column roles (``backend.tasks.base.Role``): a
# label column named for a score (regression) or a list of tags (token data) is found as well.
TEXT_NAMES = tasks.names_for("text")
LABEL_NAMES = tasks.names_for("label")
# A second text is found with the first of its known partner: text_a + text_b, sentence1 +
# sentence2, premise + hypothesis (the pair role's names, each beside the text name it follows).
PAIR_NAMES = tuple(zip(("text_a", "sentence1", "premise"), tasks.names_for("text_pair"), strict=True))


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns hold the text, the optional second text, and the label."""

    text: str
    label: str
    text_pair: str | None = None


def detect_columns(columns: list[str], df: pd.DataFrame | None = None) -> ColumnMapping:
    """Auto-detect the text / optional pair / label columns by name (case-insensitive).

    Known pairs (text_a+text_b, sentence1+sentence2, premise+hypothesis) map to
    text+pair. With ``df``, a lone non-label column of free text counts as the
    text even if unnamed. Raises DataError listing the columns found.
    """
    return _mapping(list(columns), df, None, None, None)


def resolve_mapping(
    df: pd.DataFrame,
    source_name: str,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    options: tuple[str, str, str] = ("text_column", "text_pair_column", "label_column"),
) -> ColumnMapping:
    """Apply explicit column choices over auto-detection (None or "" = not chosen).

    Choosing the text column turns off pair detection: pass the pair too if
    there is one. Raises DataError naming ``source_name`` and the columns found; ``options``
    are the names the caller chose the columns by (``tag_field`` for a CoNLL-U file's tag).
    """
    columns = [str(c) for c in df.columns]
    chosen = dict(zip(options, (text_column, text_pair_column, label_column), strict=True))
    for option, column in chosen.items():
        if column and column not in columns:
            raise DataError(
                f"{source_name}: {option}={column!r} is not a column; columns found: {column_names(columns)}."
            )
    try:
        return _mapping(
            columns,
            df,
            text_column or None,
            text_pair_column or None,
            label_column or None,
        )
    except DataError as exc:
        raise DataError(f"{source_name}: {exc}") from None


def _mapping(
    columns: list[str],
    df: pd.DataFrame | None,
    text: str | None,
    pair: str | None,
    label: str | None,
) -> ColumnMapping:
    label = label or _find_named([c for c in columns if c not in (text, pair)], LABEL_NAMES)
    if label is None:
        raise DataError(
            f"no label column found; columns found: {column_names(columns)}. Name it one of "
            f"{', '.join(LABEL_NAMES)}, or choose it (label_column)."
        )
    if text is None:
        text, detected_pair = _detect_text([c for c in columns if c not in (label, pair)], df)
        pair = pair or detected_pair
    if len({text, label, pair} - {None}) != 3 - (pair is None):
        raise DataError(f"the text ({text!r}), pair ({pair!r}) and label ({label!r}) columns must differ.")
    return ColumnMapping(text=text, label=label, text_pair=pair)


def _detect_text(candidates: list[str], df: pd.DataFrame | None) -> tuple[str, str | None]:
    for first, second in PAIR_NAMES:
        a, b = _find_named(candidates, (first,)), _find_named(candidates, (second,))
        if a and b:
            return a, b
    text = _find_named(candidates, TEXT_NAMES)
    if text:
        return text, None
    if df is not None:
        free_text = [c for c in candidates if c in df.columns and _holds_free_text(df[c])]
        if len(free_text) == 1:
            return free_text[0], None
    raise DataError(
        f"no text column found; columns found: {column_names(candidates)}. Name it one of "
        f"{', '.join(TEXT_NAMES)}, or choose it (text_column)."
    )


def _find_named(columns: list[str], names: tuple[str, ...]) -> str | None:
    by_lower: dict[str, str] = {}
    for column in columns:
        by_lower.setdefault(column.lower(), column)
    return next((by_lower[n] for n in names if n in by_lower), None)


def _holds_free_text(series: pd.Series) -> bool:
    # Every CSV cell is a string, so "holds strings" must exclude numeric-looking ids.
    values = [v for v in series.head(1000).tolist() if not is_missing(v)]
    return bool(values) and all(isinstance(v, str) and not looks_numeric(v) for v in values)


def check_mapped_columns(df: pd.DataFrame, mapping: ColumnMapping, source_name: str) -> None:
    """DataError when a second file (the eval file) lacks a column the mapping uses."""
    needed = [c for c in (mapping.text, mapping.text_pair, mapping.label) if c]
    absent = [c for c in needed if c not in df.columns]
    if absent:
        raise DataError(
            f"{source_name}: the eval file lacks column(s) {column_names(absent)} used for "
            f"training; columns found: {column_names(df.columns)}."
        )
