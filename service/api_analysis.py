"""Error analysis of finished runs: which evaluation examples a run gets wrong (filtered,
sorted, downloadable), where two runs disagree, how well calibrated it is, and how it does
on another uploaded dataset with the same labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from backend.errors import ConfigError
from service.api_state import WorkbenchState

SORTS = ("confidence_desc", "confidence_asc", "row")
MAX_ROWS = 1000  # per answer: a page shows a few hundred; the CSV has them all


class AnalysisApi(WorkbenchState):
    """Per-example results of succeeded runs (mixed into ``Workbench``)."""

    def _predictions(self, job_id: int) -> Any:
        from backend.artifacts.predictions import read_predictions

        job = self._finished_job(job_id)
        frame = read_predictions(job.artifact_dir or "")
        if frame is None:
            raise ConfigError(
                f"job {job_id} has no stored evaluation predictions (it ran before this version); re-run it"
            )
        return frame

    def _filtered(
        self, job_id: int, wrong_only: bool, true_label: str | None, predicted_label: str | None, sort: str
    ) -> Any:
        if sort not in SORTS:
            raise ConfigError(f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
        frame = self._predictions(job_id)
        if wrong_only:
            frame = frame[~frame["correct"]]
        if true_label:
            frame = frame[frame["true"] == true_label]
        if predicted_label:
            frame = frame[frame["predicted"] == predicted_label]
        if sort != "row":
            frame = frame.sort_values("confidence", ascending=sort == "confidence_asc", kind="stable")
        return frame

    def predictions(
        self,
        job_id: int,
        *,
        wrong_only: bool = False,
        true_label: str | None = None,
        predicted_label: str | None = None,
        sort: str = "confidence_desc",
        limit: int = 200,
    ) -> dict[str, Any]:
        """Evaluation examples with true label, prediction and confidence: {total, matching, rows}."""
        total = len(self._predictions(job_id))
        frame = self._filtered(job_id, wrong_only, true_label, predicted_label, sort)
        shown = frame.head(max(0, min(int(limit), MAX_ROWS)))
        columns = ["row", "text", "pair", "true", "predicted", "confidence", "correct"]
        rows = [{k: _plain(r[k]) for k in columns} for r in shown.to_dict("records")]
        return {"job_id": job_id, "total": total, "matching": len(frame), "rows": rows}

    def predictions_csv(self, job_id: int, **filters: Any) -> Path:
        """The filtered examples as a CSV (cells a spreadsheet would run are quoted)."""
        from backend.artifacts.csv_safe import write_csv

        frame = self._filtered(
            job_id,
            bool(filters.get("wrong_only")),
            filters.get("true_label"),
            filters.get("predicted_label"),
            filters.get("sort", "confidence_desc"),
        )
        target = self.settings.data_dir / "exports" / f"job-{job_id}-predictions.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        write_csv(frame.drop(columns=["probs"]), target)
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
             "a_predicted": a["predicted"].iloc[i], "a_confidence": float(a["confidence"].iloc[i]),
             "b_predicted": b["predicted"].iloc[i], "b_confidence": float(b["confidence"].iloc[i])}
            for i in np.flatnonzero(differ)[: max(0, min(int(limit), MAX_ROWS))]
        ]  # fmt: skip
        return {"jobs": [job_a, job_b], "disagree": int(differ.sum()), "total": len(a), "rows": rows}

    def calibration(self, job_id: int) -> dict[str, Any]:
        """Expected calibration error and the reliability diagram's bins."""
        from backend.artifacts.predictions import calibration

        frame = self._predictions(job_id)
        return {"job_id": job_id, **calibration(frame["confidence"].to_numpy(), frame["correct"].to_numpy())}


def _plain(value: Any) -> Any:
    """numpy scalars as Python ones (JSON)."""
    return value.item() if isinstance(value, np.generic) else value
