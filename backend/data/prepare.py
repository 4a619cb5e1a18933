"""Prepare a user's labelled table (and optional eval file) for its task.

Flow: each file is read once (``spec.read_limited``: any supported format, the row
limit) -> column mapping (auto-detected, overridable) -> usable rows (``check``) -> the
task (named, or "auto" from the label column) checks the labels and makes the targets
(class ids, scores) -> a seeded stratified train/eval split (``sampling``; a score is
stratified by its quantile bin). The result carries
the splits and a ``DatasetSpec`` per file, so callers that store the files need not read
them again. Pure: it reads the user's files and writes nothing, so the UI, the CLI and
a worker can all call it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backend.cells import listing
from backend.data.check import UsableRows, check_usable
from backend.data.mapping import ColumnMapping, check_mapped_columns, resolve_mapping
from backend.data.sampling import eval_indices, stratified_sample
from backend.data.spec import DatasetSpec, read_limited
from backend.errors import ConfigError, DataError
from backend.tasks import registry
from backend.tasks.base import Task

if TYPE_CHECKING:
    import datasets


@dataclass
class Split:
    """One side of the data: texts, optional pair texts, targets (class ids, scores), source rows."""

    texts: list[str]
    pairs: list[str] | None
    labels: list[Any]
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
    task: Task = field(default_factory=lambda: registry.get(None))  # chosen, or "auto" recognised it
    # training rows held out to choose the task's "auto" settings on (``with_holdout``)
    holdout: Split | None = None

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
    task: str | None = None,
    options: tuple[str, str, str] = ("text_column", "text_pair_column", "label_column"),
    task_config: dict[str, Any] | None = None,
) -> PreparedData:
    """Load, validate, make the task's targets, then split (stratified, seeded) or use ``eval_path``.

    ``task``: a task key, or "auto"/None to recognise it from the label column
    (``backend.tasks.registry.resolve``). Each file is read once. Class ids follow
    ``label_names``: sorted, numerically when every label is a whole number. Rows with a
    missing text or label (or a label the task cannot read, e.g. a score that is not a
    number) raise DataError unless ``drop_invalid``, which drops them and adds a warning. The
    split gives every stratum (class, score bin) at least one eval row; ``max_train_samples``
    then keeps a stratified subset of the train side only. A file with more than ``max_rows``
    rows is a DataError before any other check of it. ``options``: the names the columns were
    chosen by, for messages (``--tags-column``'s is ``tags_column``). ``task_config``: the task's
    own settings (``Task.configured``). Pure: reads the files, writes nothing.
    """
    _check_options(eval_path, eval_fraction, max_train_samples)
    warnings: list[str] = []
    chosen = (text_column, text_pair_column, label_column)
    # a named task frames the table at the run's settings too (its columns from others: Task.frame)
    named = None if task in (registry.AUTO, None, "") else registry.get(task).configured(task_config)
    spec, pool = _read_train(path, chosen, options, max_rows, drop_invalid, warnings, named)
    kind = registry.resolve(task, pool.names, pool.numeric, pool.reader.cells, path_name(path))
    kind = kind.configured(task_config)  # the run's task settings (the tag scheme...), checked
    column = spec.mapping.label
    pool = drop_unreadable(kind, pool, spec.name, column, drop_invalid, warnings)
    pool = normalised(kind, pool, spec.name, warnings)
    splitting = eval_path is None
    label_names = kind.label_names(pool.names, pool.numeric, pool.rows, column, spec.name, splitting)
    train, eval_spec = _to_split(kind, pool, label_names), None
    if eval_path is None:
        train, evaluation = _split_off_eval(kind, train, eval_fraction, seed)
    else:
        eval_spec, evaluation = _read_eval(
            eval_path, spec.mapping, kind, label_names, max_rows, drop_invalid, warnings
        )
    train = _limit_train(kind, train, max_train_samples, seed, warnings)
    return PreparedData(train, evaluation, label_names, warnings, spec, eval_spec, kind)


def with_holdout(data: PreparedData, seed: int) -> PreparedData:
    """The run's data with the training rows its task holds out to choose its "auto" settings on
    (``Task.holdout_rows``: a threshold), stratified and seeded, never trained on; unchanged
    when the task holds out none."""
    rows = data.task.holdout_rows(len(data.train))
    if rows <= 0:
        return data
    if rows >= len(data.train):
        raise DataError(
            f"{len(data.train)} training rows leave none to train on once {rows} are held out to "
            "choose the task's settings; add rows, or give the settings a value instead of auto"
        )
    train, held = _split_off_eval(data.task, data.train, rows / len(data.train), seed)
    return replace(data, train=train, holdout=held)


def path_name(path: str | Path) -> str:
    return Path(path).name


def drop_unreadable(
    task: Task, usable: UsableRows, source: str, column: str, drop_invalid: bool, warnings: list[str]
) -> UsableRows:
    """With ``drop_invalid``, the rows whose label the task cannot read, dropped with a warning
    (without it the task's check names them)."""
    bad = set(task.bad_rows(usable.names))
    if not bad or not drop_invalid:
        return usable
    if len(bad) == len(usable.names):
        return usable  # nothing would be left: let the task's check say why
    rows = [r for i, r in enumerate(usable.rows) if i in bad]
    warnings.append(
        f"{source}: dropped {len(bad)} row(s) whose '{column}' the task cannot read (rows {listing(rows)})."
    )
    keep = [i for i in range(len(usable.names)) if i not in bad]
    pairs = None if usable.pairs is None else [usable.pairs[i] for i in keep]
    names, rows = [usable.names[i] for i in keep], [usable.rows[i] for i in keep]
    texts = [usable.texts[i] for i in keep]
    return UsableRows(
        texts, pairs, names, rows, usable.numeric, usable.missing, usable.dropped + len(bad), usable.reader
    )


def normalised(task: Task, usable: UsableRows, source: str, warnings: list[str]) -> UsableRows:
    """The labels as the task reads them (IOB1 tags as IOB2), with its notes in ``warnings``."""
    names, notes = task.normalise(usable.names, source)
    warnings.extend(notes)
    return replace(usable, names=names)


def _read_train(
    path: str | Path,
    chosen: tuple[str | None, str | None, str | None],
    options: tuple[str, str, str],
    max_rows: int | None,
    drop_invalid: bool,
    warnings: list[str],
    named: Task | None = None,
) -> tuple[DatasetSpec, UsableRows]:
    """Read the training file once: its spec and usable rows under the resolved mapping."""
    name = Path(path).name
    df, sha256 = read_limited(path, max_rows, named)
    warnings.extend(df.attrs.get("warnings", []))  # e.g. spans that did not align with words
    mapping = resolve_mapping(df, name, *chosen, options=options)
    usable = check_usable(df, mapping, name, drop_invalid, warnings, named)
    return DatasetSpec.of(path, sha256, df, mapping, usable), usable


def _read_eval(
    path: str | Path,
    mapping: ColumnMapping,
    task: Task,
    label_names: list[str],
    max_rows: int | None,
    drop_invalid: bool,
    warnings: list[str],
) -> tuple[DatasetSpec, Split]:
    """Read the eval file once, under the training file's mapping, task (at the run's settings:
    its cells read as the training file's were) and labels."""
    name = Path(path).name
    df, sha256 = read_limited(path, max_rows, task)
    warnings.extend(df.attrs.get("warnings", []))
    check_mapped_columns(df, mapping, name)
    usable = check_usable(df, mapping, name, drop_invalid, warnings, task)
    registry.resolve(task.key, usable.names, usable.numeric, usable.reader.cells, name)  # same kind of data
    usable = drop_unreadable(task, usable, name, mapping.label, drop_invalid, warnings)
    usable = normalised(task, usable, name, warnings)
    warnings.extend(task.eval_warnings(usable.names, usable.rows, label_names, mapping.label, name))
    return DatasetSpec.of(path, sha256, df, mapping, usable), _to_split(task, usable, label_names)


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


def _to_split(task: Task, usable: UsableRows, label_names: list[str]) -> Split:
    return Split(usable.texts, usable.pairs, task.targets(usable.names, label_names), usable.rows)


def _take(split: Split, indices: list[int]) -> Split:
    pairs = None if split.pairs is None else [split.pairs[i] for i in indices]
    texts = [split.texts[i] for i in indices]
    labels = [split.labels[i] for i in indices]
    return Split(texts, pairs, labels, [split.rows[i] for i in indices])


def _split_off_eval(task: Task, split: Split, fraction: float, seed: int) -> tuple[Split, Split]:
    chosen = set(eval_indices(task.strata(split.labels), fraction, seed))
    rest = [i for i in range(len(split)) if i not in chosen]
    return _take(split, rest), _take(split, sorted(chosen))


def _limit_train(task: Task, split: Split, limit: int | None, seed: int, warnings: list[str]) -> Split:
    if limit is None or limit >= len(split):
        return split
    strata = task.strata(split.labels)
    classes = len(set(strata))
    if limit < classes:
        warnings.append(
            f"max_train_samples={limit} is below the number of classes ({classes}); "
            "some classes get no training rows."
        )
    low = 1 if limit >= classes else 0
    return _take(split, stratified_sample(strata, limit, low=low, keep=0, seed=seed))
