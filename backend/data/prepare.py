"""Prepare a user's labelled table (and optional eval file) for classification.

Flow: each file is read once (``spec.read_limited``: any supported format, the row
limit) -> column mapping (auto-detected, overridable) -> usable rows and label ids
(``check``) -> a seeded stratified train/eval split (``sampling``). The result carries
the splits and a ``DatasetSpec`` per file, so callers that store the files need not read
them again. Pure: it reads the user's files and writes nothing, so the UI, the CLI and
a worker can all call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backend.data.check import (
    UsableRows,
    check_classes,
    check_eval_labels,
    check_usable,
    sorted_label_names,
)
from backend.data.mapping import ColumnMapping, check_mapped_columns, resolve_mapping
from backend.data.sampling import eval_indices, stratified_sample
from backend.data.spec import DatasetSpec, read_limited
from backend.errors import ConfigError

if TYPE_CHECKING:
    import datasets


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
    warnings: list[str]
    spec: DatasetSpec  # the training file, as read and checked
    eval_spec: DatasetSpec | None  # the eval file, if one was given

    @property
    def mapping(self) -> ColumnMapping:
        """The resolved columns (the eval file uses the same)."""
        return self.spec.mapping

    @property
    def source(self) -> str:
        """The training file's path."""
        return str(self.spec.path)

    @property
    def eval_source(self) -> str | None:
        """The eval file's path, or None when the eval split came from the training file."""
        return None if self.eval_spec is None else str(self.eval_spec.path)

    @property
    def id2label(self) -> dict[int, str]:
        """Label id -> name, as a model config wants it."""
        return dict(enumerate(self.label_names))

    @property
    def label2id(self) -> dict[str, int]:
        """Label name -> id."""
        return {name: i for i, name in enumerate(self.label_names)}


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

    Each file is read once. Label ids follow ``label_names``: sorted, numerically when
    every label is a whole number. Rows with a missing text or label raise DataError
    unless ``drop_invalid``, which drops them and adds a warning. The split gives every
    class at least one eval row; ``max_train_samples`` then keeps a stratified subset of
    the train side only. A file with more than ``max_rows`` rows is a DataError before
    any other check of it. Pure: reads the files, writes nothing.
    """
    _check_options(eval_path, eval_fraction, max_train_samples)
    warnings: list[str] = []
    chosen = (text_column, text_pair_column, label_column)
    spec, pool = _read_train(path, chosen, max_rows, drop_invalid, warnings)
    check_classes(pool.names, spec.mapping.label, spec.name, splitting=eval_path is None)
    label_names = sorted_label_names(pool.names, pool.numeric)
    label2id = {label: i for i, label in enumerate(label_names)}
    train, eval_spec = _to_split(pool, label2id), None
    if eval_path is None:
        train, evaluation = _split_off_eval(train, eval_fraction, seed)
    else:
        eval_spec, evaluation = _read_eval(
            eval_path, spec.mapping, label2id, max_rows, drop_invalid, warnings
        )
    train = _limit_train(train, max_train_samples, seed, warnings)
    return PreparedData(train, evaluation, label_names, warnings, spec, eval_spec)


def _read_train(
    path: str | Path,
    chosen: tuple[str | None, str | None, str | None],
    max_rows: int | None,
    drop_invalid: bool,
    warnings: list[str],
) -> tuple[DatasetSpec, UsableRows]:
    """Read the training file once: its spec and usable rows under the resolved mapping."""
    name = Path(path).name
    df, sha256 = read_limited(path, max_rows)
    mapping = resolve_mapping(df, name, *chosen)
    usable = check_usable(df, mapping, name, drop_invalid, warnings)
    return DatasetSpec.of(path, sha256, df, mapping, usable), usable


def _read_eval(
    path: str | Path,
    mapping: ColumnMapping,
    label2id: dict[str, int],
    max_rows: int | None,
    drop_invalid: bool,
    warnings: list[str],
) -> tuple[DatasetSpec, Split]:
    """Read the eval file once, under the training file's mapping and label ids."""
    name = Path(path).name
    df, sha256 = read_limited(path, max_rows)
    check_mapped_columns(df, mapping, name)
    usable = check_usable(df, mapping, name, drop_invalid, warnings)
    warnings.extend(check_eval_labels(usable.names, list(label2id), name))
    return DatasetSpec.of(path, sha256, df, mapping, usable), _to_split(usable, label2id)


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
