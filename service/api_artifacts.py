"""The Workbench's trained models: compare runs, export zips, merge LoRA, predict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from backend.errors import ConfigError
from jobs import views
from service.api_state import WorkbenchState
from service.records import (
    CompareResult,
    Prediction,
)


class ArtifactsApi(WorkbenchState):
    """Finished runs side by side, and their models out of the app."""

    significance: Callable[[list[int]], dict[str, Any]]  # from AnalysisApi (mixed into Workbench)

    def compare(self, ids: list[int]) -> CompareResult:
        """Table, aligned series, config differences and per-class results of jobs."""
        ids = list(dict.fromkeys(ids))
        with self.db.read() as session:
            jobs = [self._job(session, i) for i in ids]
            series = {j.id: views.series(session, j.id) for j in jobs}
        return {
            "table": [views.compare_row(j) for j in jobs],
            "baselines": views.majority_rows(jobs),
            "series": series,
            "config_diff": views.config_diff({j.id: j.config for j in jobs}),
            "per_class_f1": {j.id: views.per_class_f1(j) for j in jobs},
            "confusion": {j.id: views.confusion(j) for j in jobs},
            **self._significance([j.id for j in jobs if j.status == "succeeded"]),
            "pooled_seeds": views.pooled_seeds(jobs),
        }

    def _significance(self, ids: list[int]) -> dict[str, Any]:
        """``significance`` and ``significance_note`` of ``compare`` (see CompareResult)."""
        if len(ids) < 2:
            return {"significance": None, "significance_note": None}
        try:
            return {"significance": self.significance(ids), "significance_note": None}
        except ConfigError as exc:  # different evaluation rows, or a run without predictions
            return {"significance": None, "significance_note": f"No verdicts: {exc}."}

    def export(self, job_id: int, out: str | Path | None = None, *, include_samples: bool = False) -> Path:
        """Zip a succeeded job's model folder (default: <data>/exports/job-ID.zip).

        The zip names the base model by hub id and holds no server path; evaluation texts
        (sample predictions) go in only with ``include_samples``.
        """
        from backend.artifacts.export import export_zip

        job = self._finished_job(job_id)
        name = f"job-{job_id}-with-samples.zip" if include_samples else f"job-{job_id}.zip"
        target = Path(out) if out else self.settings.data_dir / "exports" / name
        return export_zip(job.artifact_dir or "", target, include_samples=include_samples)

    def export_merged(self, job_id: int) -> Path:
        """Zip a succeeded LoRA job merged into its base (a plain transformers model)."""
        from backend.artifacts import formats

        job = self._finished_job(job_id)
        with self._lock:
            return formats.get("merged").export(
                Path(job.artifact_dir or ""), self.settings.data_dir / "exports" / f"job-{job_id}-merged.zip"
            )

    def predict(self, ids: list[int], texts: list[str], pairs: list[str] | None = None) -> list[Prediction]:
        """Each job's prediction for every text: its label and probability (a regression run: the
        number as ``label`` and ``score``, no probability)."""
        if pairs is not None and len(pairs) != len(texts):
            raise ConfigError(f"got {len(texts)} texts but {len(pairs)} second texts; give one per text")
        results = []
        for job_id in dict.fromkeys(ids):
            job = self._finished_job(job_id)
            predictor = self._predictor(job.artifact_dir or "")
            predictions = predictor.predict_items(texts, pairs)
            view = predictor.task.view_kind  # the UI draws each kind with its own renderer
            results.append({"id": job.id, "name": job.name, "view": view, "predictions": predictions})  # type: ignore[typeddict-item]
        return results

    def _predictor(self, artifact_dir: str) -> Any:
        from backend.artifacts.load import Predictor

        with self._lock:  # load each model once, even when the UI asks from two threads
            if artifact_dir not in self._predictors:
                self._predictors[artifact_dir] = Predictor(artifact_dir)
            return self._predictors[artifact_dir]
