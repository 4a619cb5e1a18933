"""The experiment trackers' back ends: TensorBoard event files and an MLflow run.

Each is driven by :class:`jobs.trackers.ThreadedTracker` from its own thread, so these
classes are plain and single-threaded; their libraries are imported only when switched on.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

EXPERIMENT = "adaptation-workbench"  # the MLflow experiment every job's run belongs to
# Step metrics are sent in batches: one SQLite transaction per optimizer step would cost more
# than the step on a GPU. MLflow takes at most 1000 metrics and 100 params per batch.
FLUSH_SECONDS, MAX_METRICS, MAX_PARAMS, MAX_PARAM_CHARS = 1.0, 1000, 100, 6000


class TensorBoardTracker:
    """One event-file folder per job: scalars by step, the config as text and in the HParams
    tab (so runs can be compared there), the final figures as ``final/<name>``."""

    def __init__(self, folder: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(folder), flush_secs=10)
        self._params: dict[str, Any] = {}
        self._final: dict[str, float] = {}

    def params(self, values: dict[str, Any]) -> None:
        # Written once at close (one table reads best). Numbers stay numbers: the HParams tab
        # can then filter and plot by them; anything else (None, a path) as text.
        self._params |= {k: v if isinstance(v, int | float | str) else str(v) for k, v in values.items()}

    def scalars(self, step: int, values: dict[str, float]) -> None:
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)

    def summary(self, step: int, values: dict[str, float]) -> None:
        self._final = {f"final/{name}": value for name, value in values.items()}
        self.scalars(step, self._final)

    def close(self, status: str) -> None:
        from torch.utils.tensorboard.summary import hparams

        rows = "".join(f"| {name} | {value} |\n" for name, value in sorted(self._params.items()))
        self.writer.add_text("config", f"| setting | value |\n|---|---|\n{rows}")
        self.writer.add_text("status", status)
        # The HParams tab reads these three summaries from the run's own folder;
        # SummaryWriter.add_hparams would write them to a new sub-folder, a second "run".
        for summary in hparams(dict(self._params), self._final):
            self.writer.file_writer.add_summary(summary)
        self.writer.close()


class MlflowTracker:
    """One MLflow run per job in the ``adaptation-workbench`` experiment."""

    def __init__(self, uri: str, run_name: str, tags: dict[str, str]) -> None:
        from mlflow import MlflowClient

        store = local_sqlite_path(uri)
        if store is not None:
            store.parent.mkdir(parents=True, exist_ok=True)  # MLflow makes the file, not its folder
        self.client = MlflowClient(tracking_uri=uri)
        # A local store keeps its (unused for now) artifact folder beside the database, under
        # the data folder, not in the worker's working directory.
        artifacts = str(store.parent / "artifacts") if store is not None else None
        experiment = self._experiment(artifacts)
        self.run_id = self.client.create_run(experiment, run_name=run_name, tags=tags).info.run_id
        self._pending: list[Any] = []
        self._flushed = time.monotonic()

    def _experiment(self, artifacts: str | None) -> str:
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(EXPERIMENT)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self.client.create_experiment(EXPERIMENT, artifact_location=artifacts))
        except MlflowException:  # another worker made it meanwhile
            found = self.client.get_experiment_by_name(EXPERIMENT)
            if found is None:
                raise
            return str(found.experiment_id)

    def params(self, values: dict[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(name, str(value)[:MAX_PARAM_CHARS]) for name, value in values.items()]
        for start in range(0, len(items), MAX_PARAMS):
            self.client.log_batch(self.run_id, params=items[start : start + MAX_PARAMS])

    def scalars(self, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self._pending += [Metric(name, value, now, step) for name, value in values.items()]
        if len(self._pending) >= MAX_METRICS // 2 or time.monotonic() - self._flushed >= FLUSH_SECONDS:
            self._flush()

    def summary(self, step: int, values: dict[str, float]) -> None:
        self.scalars(step, values)  # the plain names (accuracy, ...) are the run's headline columns
        self._flush()

    def close(self, status: str) -> None:
        self._flush()
        self.client.set_terminated(self.run_id, status)

    def _flush(self) -> None:
        pending, self._pending, self._flushed = self._pending, [], time.monotonic()
        for start in range(0, len(pending), MAX_METRICS):
            self.client.log_batch(self.run_id, metrics=pending[start : start + MAX_METRICS])


def local_sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///path`` tracking URI; None for any other URI."""
    prefix = "sqlite:///"
    return Path(uri[len(prefix) :]) if uri.startswith(prefix) and len(uri) > len(prefix) else None
