"""Error analysis of finished runs: which evaluation examples a run gets wrong (filtered,
sorted, downloadable), where two runs disagree, how well calibrated it is, and how it does
on another uploaded dataset with the same labels."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from backend.artifacts.predictions import EVALUATIONS_DIR
from backend.errors import ConfigError
from jobs import datasets
from service.api_state import WorkbenchState

MAX_ROWS = 1000  # per answer: a page shows a few hundred; the CSV has them all


class AnalysisApi(WorkbenchState):
    """Per-example results of succeeded runs (mixed into ``Workbench``)."""

    _predictor: Callable[[str], Any]  # from ArtifactsApi: one loaded model per run folder

    def _predictions(self, job_id: int, dataset_id: int | None = None) -> Any:
        """The run's own evaluation predictions, or those of its evaluation on ``dataset_id``."""
        from backend.artifacts.predictions import read_predictions

        job = self._finished_job(job_id)
        if dataset_id:
            frame = read_predictions(_evaluation_file(job.artifact_dir or "", int(dataset_id), ".parquet"))
            if frame is None:
                raise ConfigError(
                    f"job {job_id} has not been evaluated on dataset {dataset_id}; evaluate it first"
                )
            return frame
        frame = read_predictions(job.artifact_dir or "")
        if frame is None:
            raise ConfigError(
                f"job {job_id} has no stored evaluation predictions (it ran before this version); re-run it"
            )
        return frame

    def eval_predictions(self, job_id: int) -> Any:
        """A succeeded run's own evaluation predictions (a DataFrame; error analysis's file)."""
        return self._predictions(job_id)

    def prediction_scatter(self, job_id: int) -> str:
        """A succeeded run's evaluation rows as an SVG of predicted against true, for a task
        whose prediction is a number (regression); "" for one whose prediction is a label."""
        from service.svg_charts import truth_scatter_svg

        if self._task(int(job_id)).view_kind != "score":  # the view of a number per row draws it
            return ""
        frame = self._predictions(int(job_id))
        return truth_scatter_svg(frame["true"].tolist(), frame["predicted"].tolist())

    def significance(self, job_ids: list[int]) -> dict[str, Any]:
        """Runs on the same evaluation rows, each with its score's interval, and every other run
        against the best: better, within noise or worse (``backend.significance.compare_runs``).
        A ConfigError says which runs were evaluated on different rows."""
        from backend.significance import compare_runs
        from backend.tasks import registry as tasks

        named = [(f"job {int(job_id)}", self._predictions(int(job_id))) for job_id in job_ids]
        kinds = {int(j): tasks.get(self._finished_job(int(j)).task).key for j in job_ids}
        if len(set(kinds.values())) > 1:
            listed = ", ".join(f"job {j} ({kind})" for j, kind in kinds.items())
            raise ConfigError(f"runs of different tasks cannot be paired: {listed}")
        try:
            return compare_runs(named, tasks.get(next(iter(kinds.values()), None)).scoring)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def evaluate(self, job_id: int, dataset_id: int) -> dict[str, Any]:
        """Evaluate a succeeded run on another uploaded dataset with the same labels: metrics
        (accuracy, macro-F1, per class, confusion matrix), kept with the per-example
        predictions so that ``predictions(job_id, dataset_id=...)`` can show its errors."""
        from backend.data.mapping import ColumnMapping
        from backend.evaluation import evaluate_on

        job = self._finished_job(job_id)
        row = datasets.get(self.db, int(dataset_id))
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        mapping = ColumnMapping(row.text_column, row.label_column, row.text_pair_column)
        folder = job.artifact_dir or ""
        metrics = evaluate_on(
            self._predictor(folder),
            row.path,
            mapping,
            _evaluation_file(folder, row.id, ".parquet"),
            self.settings.max_rows,
        )
        result = {"job_id": job_id, "dataset_id": row.id, "dataset": row.name, **metrics}
        target = _evaluation_file(folder, row.id, ".json")
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=2))
        tmp.replace(target)
        return result

    def evaluations(self, job_id: int) -> list[dict[str, Any]]:
        """Every evaluation of a run on another dataset, oldest first (the stored results)."""
        folder = Path(self._finished_job(job_id).artifact_dir or "") / EVALUATIONS_DIR
        files = sorted(folder.glob("dataset-*.json"), key=lambda p: p.stat().st_mtime)
        return [json.loads(p.read_text()) for p in files]

    def _filtered(
        self,
        job_id: int,
        wrong_only: bool,
        true_label: str | None,
        predicted_label: str | None,
        sort: str,
        dataset_id: int | None = None,
    ) -> Any:
        task = self._task(job_id)
        if sort not in task.sorts:
            raise ConfigError(f"sort must be one of {', '.join(task.sorts)}, not {sort!r}")
        frame = self._predictions(job_id, dataset_id)
        return task.error_rows(frame, wrong_only, true_label, predicted_label, sort)  # the task's own view

    def _task(self, job_id: int) -> Any:
        """The task of a finished run (``backend.tasks``) with the settings it trained with: what
        its rows are and how to show them."""
        from backend.tasks import registry as tasks

        job = self._finished_job(job_id)
        return tasks.get(job.task).configured((job.config or {}).get("task_config"))

    def predictions(
        self,
        job_id: int,
        *,
        wrong_only: bool = False,
        true_label: str | None = None,
        predicted_label: str | None = None,
        sort: str = "confidence_desc",
        limit: int = 200,
        dataset_id: int | None = None,
    ) -> dict[str, Any]:
        """Evaluation examples with true label, prediction and confidence: {total, matching, rows}
        (``dataset_id``: those of the run's evaluation on that dataset)."""
        total = len(self._predictions(job_id, dataset_id))
        frame = self._filtered(job_id, wrong_only, true_label, predicted_label, sort, dataset_id)
        shown = frame.head(max(0, min(int(limit), MAX_ROWS)))
        columns = ["row", "text", "pair", "true", "predicted", "confidence", "correct", "error", "errors"]
        task = self._task(job_id)
        records = shown.to_dict("records")
        # each row with what the task's view draws it with (tags: the gold and predicted spans)
        rows = [{**{k: _plain(r.get(k)) for k in columns}, **task.shown_row(r)} for r in records]
        # label: with a confidence; score: residuals; tags: a tag per word, sentences by errors
        matching = len(frame)
        return {"job_id": job_id, "kind": task.view_kind, "total": total, "matching": matching, "rows": rows}

    def predictions_csv(self, job_id: int, **filters: Any) -> Path:
        """The filtered examples as a CSV (cells a spreadsheet would run are quoted)."""
        from backend.artifacts.csv_safe import write_csv

        frame = self._filtered(
            job_id,
            bool(filters.get("wrong_only")),
            filters.get("true_label"),
            filters.get("predicted_label"),
            filters.get("sort", "confidence_desc"),
            filters.get("dataset_id"),
        )
        suffix = f"-dataset-{filters['dataset_id']}" if filters.get("dataset_id") else ""
        target = self.settings.data_dir / "exports" / f"job-{job_id}{suffix}-predictions.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        write_csv(frame.drop(columns=["probs"], errors="ignore"), target)
        return target

    def disagreements(self, job_a: int, job_b: int, limit: int = 200) -> dict[str, Any]:
        """Examples two runs predict differently (they must share their evaluation rows)."""
        a, b = self._predictions(job_a), self._predictions(job_b)
        if len(a) != len(b) or a["text"].tolist() != b["text"].tolist():
            raise ConfigError(
                f"jobs {job_a} and {job_b} were evaluated on different rows; compare runs on one set"
            )
        differ = a["predicted"].to_numpy() != b["predicted"].to_numpy()
        rows = [
            {"row": _plain(a["row"].iloc[i]), "text": a["text"].iloc[i], "true": a["true"].iloc[i],
             "a_predicted": a["predicted"].iloc[i], "a_confidence": _confidence(a, i),
             "b_predicted": b["predicted"].iloc[i], "b_confidence": _confidence(b, i)}
            for i in np.flatnonzero(differ)[: max(0, min(int(limit), MAX_ROWS))]
        ]  # fmt: skip
        return {"jobs": [job_a, job_b], "disagree": int(differ.sum()), "total": len(a), "rows": rows}

    def calibration(self, job_id: int, dataset_id: int | None = None) -> dict[str, Any]:
        """Expected calibration error and the reliability diagram's bins."""
        from backend.artifacts.predictions import calibration

        task = self._task(job_id)
        if task.view_kind != "label":
            raise ConfigError(
                f"job {job_id} predicts {task.predicts}, not a class per text: no confidence to calibrate"
            )
        frame = self._predictions(job_id, dataset_id)
        return {"job_id": job_id, **calibration(frame["confidence"].to_numpy(), frame["correct"].to_numpy())}


def _confidence(frame: Any, i: int) -> float | None:
    """A row's confidence; None for a task without one (a number, a tag per word)."""
    return float(frame["confidence"].iloc[i]) if "confidence" in frame else None


def _evaluation_file(artifact_dir: str, dataset_id: int, suffix: str) -> Path:
    return Path(artifact_dir) / EVALUATIONS_DIR / f"dataset-{dataset_id}{suffix}"


def _plain(value: Any) -> Any:
    """numpy scalars as Python ones (JSON)."""
    return value.item() if isinstance(value, np.generic) else value
