"""A finished run evaluated on another labelled file: metrics and per-example predictions.

The file's own columns are used (it may name them differently from the training file), but
its labels must be ones the run knows: a label the classifier was never trained on cannot
be scored. A run trained on sentence pairs needs a second text column, and one trained on
single texts must not silently get pairs. Rows with a missing cell are dropped and counted.
The predictions are written in the same format as the run's own evaluation predictions, so
error analysis reads both the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backend.artifacts.predictions import write_predictions
from backend.data.check import check_usable
from backend.data.mapping import ColumnMapping, check_mapped_columns
from backend.data.prepare import Split, drop_unreadable
from backend.data.spec import read_limited
from backend.errors import ConfigError
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.metrics import metrics_from_probs


def read_split(
    path: str | Path,
    mapping: ColumnMapping,
    label_names: list[str],
    max_rows: int | None,
    task: Task | None = None,
) -> tuple[Split, list[str]]:
    """The file's usable rows as a Split of the run's task's targets (class ids, scores), and any
    warnings; rows whose label the task cannot read (a score that is not a number) are dropped."""
    name, task = Path(path).name, task or tasks.get(None)
    df, _ = read_limited(path, max_rows, task)  # framed at the run's task settings (columns it assembles)
    check_mapped_columns(df, mapping, name)
    warnings: list[str] = []
    usable = check_usable(df, mapping, name, True, warnings, task)
    tasks.resolve(task.key, usable.names, usable.numeric, usable.reader.cells, name)  # the run's kind of data
    usable = drop_unreadable(task, usable, name, mapping.label, True, warnings)
    unknown = task.unknown_labels(usable.names, label_names)
    if unknown:
        raise ConfigError(
            f"{name} has label(s) {', '.join(unknown)} that the run was not trained on "
            f"(it knows {', '.join(label_names)}); evaluate on a dataset with the same labels"
        )
    split = Split(usable.texts, usable.pairs, task.targets(usable.names, label_names), usable.rows)
    return split, warnings


def check_pairs(run_pair_column: str | None, mapping: ColumnMapping, name: str) -> None:
    if run_pair_column and not mapping.text_pair:
        raise ConfigError(
            f"the run was trained on sentence pairs ({run_pair_column!r}); {name} has no second text "
            "column mapped: choose its text pair column"
        )
    if not run_pair_column and mapping.text_pair:
        raise ConfigError(
            f"the run was trained on single texts; {name} maps a second text column "
            f"({mapping.text_pair!r}): register it without one"
        )


def evaluate_on(
    predictor: Any, path: str | Path, mapping: ColumnMapping, out_file: Path, max_rows: int | None
) -> dict[str, Any]:
    """Metrics of ``predictor`` (a loaded run) on the file at ``path``; predictions to ``out_file``."""
    check_pairs(predictor.manifest.get("text_pair_column"), mapping, Path(path).name)
    task = predictor.task
    split, warnings = read_split(path, mapping, predictor.label_names, max_rows, task)
    if not len(split):
        raise ConfigError(f"{Path(path).name} has no usable rows to evaluate on")
    probs = predictor.predict_proba(split.texts, split.pairs)
    metrics = metrics_from_probs(task.truth(split.labels), probs, predictor.label_names, task)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    write_predictions(out_file, split, probs, predictor.label_names, task)
    return {**metrics, "rows": len(split), "label_names": predictor.label_names, "warnings": warnings}
