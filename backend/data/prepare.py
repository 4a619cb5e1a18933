"""Load and validate a user's labelled text table for classification.

Flow: ``read_table`` (any supported format -> DataFrame, with read errors that
name the file and line) -> column mapping (auto-detected, overridable) -> row
checks and label ids -> a seeded stratified train/eval split. Everything here is
pure: it reads the user's files and writes nothing, so the UI, the CLI and a
worker can all call it. Work on cell values (usable rows, label names,
stratified sampling, the UI's summaries) lives in ``data_stats``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

# SUPPORTED_EXTENSIONS, file_sha256 and read_table are part of this module's public API.
from backend.data.read import SUPPORTED_EXTENSIONS as SUPPORTED_EXTENSIONS
from backend.data.read import column_names
from backend.data.read import file_sha256 as file_sha256
from backend.data.read import read_table as read_table
from backend.data.stats import (
    UsableRows,
    check_classes,
    check_eval_labels,
    describe_missing,
    eval_indices,
    is_missing,
    looks_numeric,
    sorted_label_names,
    stratified_sample,
    summarize,
    usable_rows,
)
from backend.errors import ConfigError, DataError

if TYPE_CHECKING:
    import datasets

TEXT_NAMES = (
    "text", "sentence", "review", "content", "sms", "message", "tweet",
    "document", "question", "text_a", "sentence1", "premise",
)  # fmt: skip
PAIR_NAMES = (
    ("text_a", "text_b"),
    ("sentence1", "sentence2"),
    ("premise", "hypothesis"),
)
LABEL_NAMES = ("label", "labels", "class", "category", "target", "sentiment", "y")


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns hold the text, the optional second text, and the label."""

    text: str
    label: str
    text_pair: str | None = None


@dataclass
class Split:
    """One side of the data: texts, optional pair texts, label ids, source rows."""

    texts: list[str]
    pairs: list[str] | None
    labels: list[int]
    rows: list[int]

    def __len__(self) -> int:
        return len(self.texts)


@dataclass
class PreparedData:
    """Validated train/eval splits plus everything needed to trace them back."""

    train: Split
    eval: Split
    label_names: list[str]
    mapping: ColumnMapping
    warnings: list[str]
    source: str
    eval_source: str | None

    @property
    def id2label(self) -> dict[int, str]:
        """Label id -> name, as a model config wants it."""
        return dict(enumerate(self.label_names))

    @property
    def label2id(self) -> dict[str, int]:
        """Label name -> id."""
        return {name: i for i, name in enumerate(self.label_names)}


# ---------------------------------------------------------------- reading


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
) -> ColumnMapping:
    """Apply explicit column choices over auto-detection (None or "" = not chosen).

    Choosing the text column turns off pair detection: pass the pair too if
    there is one. Raises DataError naming ``source_name`` and the columns found.
    """
    columns = [str(c) for c in df.columns]
    chosen = {
        "text_column": text_column,
        "text_pair_column": text_pair_column,
        "label_column": label_column,
    }
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


# ---------------------------------------------------------------- prepare


def prepare(
    path: str | Path,
    eval_path: str | Path | None = None,
    *,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    eval_fraction: float = 0.1,
    seed: int = 0,
    drop_invalid: bool = False,
    max_train_samples: int | None = None,
    max_rows: int | None = None,
) -> PreparedData:
    """Load, validate, map labels, then split (stratified, seeded) or use ``eval_path``.

    Label ids follow ``label_names``: sorted, numerically when every label is a
    whole number. Rows with a missing text or label raise DataError unless
    ``drop_invalid``, which drops them and adds a warning. The split gives every
    class at least one eval row; ``max_train_samples`` then keeps a stratified
    subset of the train side only. A file with more than ``max_rows`` rows is a
    DataError before any other check. Pure: reads the files, writes nothing.
    """
    _check_options(eval_path, eval_fraction, max_train_samples)
    name = Path(path).name
    df = read_table(path)
    check_row_count(len(df), max_rows, name)
    mapping = resolve_mapping(df, name, text_column, text_pair_column, label_column)
    warnings: list[str] = []
    pool = _usable(df, mapping, name, drop_invalid, warnings)
    check_classes(pool.names, mapping.label, name, splitting=eval_path is None)
    label_names = sorted_label_names(pool.names, pool.numeric)
    label2id = {label: i for i, label in enumerate(label_names)}
    train = _to_split(pool, label2id)
    if eval_path is None:
        train, evaluation = _split_off_eval(train, eval_fraction, seed)
    else:
        evaluation = _load_eval(eval_path, mapping, label2id, drop_invalid, warnings)
    train = _limit_train(train, max_train_samples, seed, warnings)
    eval_source = None if eval_path is None else str(eval_path)
    return PreparedData(train, evaluation, label_names, mapping, warnings, str(path), eval_source)


def dataset_stats(
    path: str | Path,
    *,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    tokenizer: Any = None,
    max_rows: int | None = None,
) -> dict[str, Any]:
    """Overview of a table for the UI; DataError only if it cannot be read or mapped
    (or has more than ``max_rows`` rows).

    Keys: rows, columns, mapping {text, text_pair, label}, label_counts {name:
    count}, invalid_rows (rows with a missing mapped cell), preview (first 5
    rows), char_length and token_length ({p50, p90, p95, p99, max}; token
    lengths need a Hugging Face tokenizer, else None). Counts and lengths cover
    usable rows. token_histogram: [{start, end, count}] bins of token lengths (None
    without a tokenizer). Token lengths come from a seeded sample of at most
    ``data_stats.TOKEN_SAMPLE_ROWS`` rows: token_lengths_sampled is its size when it
    is a sample, else None.
    """
    name = Path(path).name
    df = read_table(path)
    check_row_count(len(df), max_rows, name)
    mapping = resolve_mapping(df, name, text_column, text_pair_column, label_column)
    return summarize(df, mapping, name, tokenizer)


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


def to_hf_dataset(split: Split, label_names: list[str]) -> datasets.Dataset:
    """An in-memory ``datasets.Dataset``: text, (text_pair), label as a ClassLabel."""
    import datasets  # deferred: a slow import that only training needs

    columns: dict[str, list[Any]] = {"text": split.texts}
    features: dict[str, Any] = {"text": datasets.Value("string")}
    if split.pairs is not None:
        columns["text_pair"] = split.pairs
        features["text_pair"] = datasets.Value("string")
    columns["label"] = split.labels
    features["label"] = datasets.ClassLabel(names=list(label_names))
    return datasets.Dataset.from_dict(columns, features=datasets.Features(features))


def _check_options(eval_path: str | Path | None, eval_fraction: float, max_train_samples: int | None) -> None:
    if eval_path is None and not 0 < eval_fraction < 1:
        raise ConfigError(f"eval_fraction must be between 0 and 1, got {eval_fraction}.")
    if max_train_samples is not None and max_train_samples < 1:
        raise ConfigError(f"max_train_samples must be at least 1, got {max_train_samples}.")


def _usable(
    df: pd.DataFrame,
    mapping: ColumnMapping,
    name: str,
    drop_invalid: bool,
    warnings: list[str],
) -> UsableRows:
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


def _to_split(usable: UsableRows, label2id: dict[str, int]) -> Split:
    labels = [label2id[n] for n in usable.names]
    return Split(usable.texts, usable.pairs, labels, usable.rows)


def _take(split: Split, indices: list[int]) -> Split:
    pairs = None if split.pairs is None else [split.pairs[i] for i in indices]
    texts = [split.texts[i] for i in indices]
    labels = [split.labels[i] for i in indices]
    return Split(texts, pairs, labels, [split.rows[i] for i in indices])


def _split_off_eval(split: Split, fraction: float, seed: int) -> tuple[Split, Split]:
    chosen = set(eval_indices(split.labels, fraction, seed))
    rest = [i for i in range(len(split)) if i not in chosen]
    return _take(split, rest), _take(split, sorted(chosen))


def _load_eval(
    path: str | Path,
    mapping: ColumnMapping,
    label2id: dict[str, int],
    drop_invalid: bool,
    warnings: list[str],
) -> Split:
    name = Path(path).name
    df = read_table(path)
    needed = [c for c in (mapping.text, mapping.text_pair, mapping.label) if c]
    absent = [c for c in needed if c not in df.columns]
    if absent:
        raise DataError(
            f"{name}: the eval file lacks column(s) {column_names(absent)} used for "
            f"training; columns found: {column_names(df.columns)}."
        )
    usable = _usable(df, mapping, name, drop_invalid, warnings)
    warnings.extend(check_eval_labels(usable.names, list(label2id), name))
    return _to_split(usable, label2id)


def _limit_train(split: Split, limit: int | None, seed: int, warnings: list[str]) -> Split:
    if limit is None or limit >= len(split):
        return split
    classes = len(set(split.labels))
    if limit < classes:
        warnings.append(
            f"max_train_samples={limit} is below the number of classes ({classes}); "
            "some classes get no training rows."
        )
    low = 1 if limit >= classes else 0
    return _take(split, stratified_sample(split.labels, limit, low=low, keep=0, seed=seed))
