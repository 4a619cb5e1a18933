"""The public error-analysis endpoints (/predictions, /predictions_csv, /disagreements,
/calibration, /evaluate, /evaluations), mixed into ``ui.endpoints.Endpoints``: the Error
analysis tab calls the same methods."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio import FileData

from ui.callers import as_id


class AnalysisEndpoints:
    """Per-example results of succeeded runs; needs ``api`` and ``shown`` from
    :class:`ui.endpoints.Endpoints`."""

    api: Any

    def predictions(
        self,
        job_id: int,
        wrong_only: bool = False,
        true_label: str | None = None,
        predicted_label: str | None = None,
        sort: str = "confidence_desc",
        limit: int = 200,
        dataset_id: int | None = None,
        request: gr.Request | None = None,
    ) -> dict[str, Any]:
        """Evaluation examples of a run with true label, prediction and confidence, filtered
        (``wrong_only``, a ``true_label``/``predicted_label`` pair) and sorted
        (confidence_desc, confidence_asc, row): {job_id, total, matching, rows}.
        ``dataset_id``: the examples of its evaluation on that dataset (see /evaluate)."""
        filters = _filters(wrong_only, true_label, predicted_label, sort, dataset_id)
        result = self.api.predictions(as_id(job_id, "job_id"), limit=int(limit), **filters)
        return self.shown(result, request)  # type: ignore[attr-defined]

    def predictions_csv(
        self,
        job_id: int,
        wrong_only: bool = False,
        true_label: str | None = None,
        predicted_label: str | None = None,
        sort: str = "confidence_desc",
        dataset_id: int | None = None,
    ) -> FileData:
        """The same examples, all of them, as a CSV file."""
        filters = _filters(wrong_only, true_label, predicted_label, sort, dataset_id)
        path = self.api.predictions_csv(as_id(job_id, "job_id"), **filters)
        return FileData(path=str(path))

    def disagreements(
        self, job_a: int, job_b: int, limit: int = 200, request: gr.Request | None = None
    ) -> dict[str, Any]:
        """The evaluation examples two runs predict differently: {jobs, disagree, total, rows}."""
        result = self.api.disagreements(as_id(job_a, "job_a"), as_id(job_b, "job_b"), int(limit))
        return self.shown(result, request)  # type: ignore[attr-defined]

    def calibration(
        self, job_id: int, dataset_id: int | None = None, request: gr.Request | None = None
    ) -> dict[str, Any]:
        """Expected calibration error and the reliability diagram's bins of a run."""
        dataset = as_id(dataset_id, "dataset_id") if dataset_id else None
        return self.shown(self.api.calibration(as_id(job_id, "job_id"), dataset), request)  # type: ignore[attr-defined]

    def evaluate(self, job_id: int, dataset_id: int, request: gr.Request | None = None) -> dict[str, Any]:
        """Evaluate a succeeded run on another uploaded dataset with the same labels: rows,
        accuracy, macro-F1, per class and the confusion matrix (kept for /predictions)."""
        result = self.api.evaluate(as_id(job_id, "job_id"), as_id(dataset_id, "dataset_id"))
        return self.shown(result, request)  # type: ignore[attr-defined]

    def evaluations(self, job_id: int, request: gr.Request | None = None) -> list[dict[str, Any]]:
        """Every evaluation of a run on another dataset, oldest first."""
        return self.shown(self.api.evaluations(as_id(job_id, "job_id")), request)  # type: ignore[attr-defined]


def _filters(
    wrong_only: Any, true_label: str | None, predicted_label: str | None, sort: str, dataset_id: Any
) -> dict[str, Any]:
    """The example filters as the API takes them ("" from a form means no filter)."""
    return {
        "wrong_only": bool(wrong_only),
        "true_label": true_label or None,
        "predicted_label": predicted_label or None,
        "sort": sort,
        "dataset_id": as_id(dataset_id, "dataset_id") if dataset_id else None,
    }
