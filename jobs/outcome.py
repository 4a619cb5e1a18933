"""How a worker's run ends: a failure explained for the user, a success recorded safely.

A finished run's outcome is written to ``outcome.json`` and then recorded with retries;
the checkpoint is deleted only once success is in the database. A worker that cannot
record it exits with ``EXIT_NOT_RECORDED``, leaving both, so the supervisor records the
success from the file (or, failing that, the job can be resumed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from backend.errors import WorkbenchError
from backend.tasks import registry as tasks
from jobs import queue
from jobs.db import Database, retry
from jobs.reporting import JobLog
from jobs.runner import EXIT_NOT_RECORDED
from jobs.schema import METRIC_COLUMNS, SUCCEEDED, Job

RECORD_ATTEMPTS = 10  # the final write: about two minutes of retries on top of the busy timeouts
OOM_MESSAGE = "ran out of memory: try a smaller batch size or max length, or 4-bit quantization"


def is_out_of_memory(exc: BaseException) -> bool:
    """CPU or GPU out-of-memory, however PyTorch or Python phrased it."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        phrase in text for phrase in ("out of memory", "not enough memory", "can't allocate memory")
    )


def explain_failure(exc: BaseException) -> tuple[str, str]:
    """(message for the user, kind): kind is memory, user or internal."""
    if is_out_of_memory(exc):
        return OOM_MESSAGE, "memory"
    if isinstance(exc, WorkbenchError):
        return str(exc), "user"
    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    message = (
        f"training failed with {type(exc).__name__}: {first_line} "
        "(the traceback is in the job's error detail and log)"
    )
    return message, "internal"


def final_fields(summary: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """Job columns for a finished run: metrics, the summary and the best epoch's detail."""
    values = {key: summary.get(key) for key in METRIC_COLUMNS}
    metrics_file = out_dir / "metrics.json"
    best = json.loads(metrics_file.read_text()).get("best") if metrics_file.is_file() else None
    evaluation = None
    task = tasks.get(summary.get("task"))
    if best:
        # the task's table per output (per class; a tag-per-word run's: per entity type, or per tag)
        per_class = task.per_output(best)
        evaluation = {
            "labels": list(per_class),
            "per_class": per_class,
            "confusion_matrix": best.get("confusion_matrix"),
            "best_epoch": best.get("epoch"),
        }
    baseline = summary.get(task.baseline_key) or {}
    return {
        **values,
        "task": summary.get("task"),
        # the results every task has (issue 46), in columns of their own
        "primary_metric": summary.get("primary_metric") or task.primary_metric,
        "score_ci": summary.get("score_ci"),
        "metrics": {k: summary[k] for k in task.headline if summary.get(k) is not None} or None,
        "baseline_name": task.baseline_label if baseline.get("score") is not None else None,
        "baseline_score": baseline.get("score"),
        "summary": summary,
        "evaluation": evaluation,
        "progress": 1.0,
        "device": summary.get("device"),
    }


def exit_code(recorded: bool) -> int:
    """0 once the outcome is recorded; 1 when something else had ended the job first."""
    return 0 if recorded else 1


def record_success(db: Database, job: Job, summary: dict[str, Any], rows_written: int, log: JobLog) -> int:
    """Hand the outcome to disk, record it with retries, and only then drop the checkpoint.

    The log line comes first: whoever sees the job succeeded must find it in the log.
    Returns the worker's exit code.
    """
    out_dir = Path(summary.get("artifact_dir") or job.artifact_dir or "")
    values = final_fields(summary, out_dir)
    try:
        retry(lambda: queue.write_outcome(out_dir, values), what="saving the outcome", attempts=3)
    except OSError as exc:  # the database write below may still work
        log.write(f"warning: could not save {queue.OUTCOME_FILE} ({exc})")
    score = f"{summary.get('primary_metric', 'accuracy')} {summary.get('score', summary.get('accuracy')):.4f}"
    log.write(f"succeeded: {score}, {rows_written} metric rows written")
    try:
        recorded = queue.finish(
            db,
            job.id,
            SUCCEEDED,
            attempts=RECORD_ATTEMPTS,
            on_retry=lambda exc, delay: log.write(f"warning: could not record success yet ({exc}); retrying"),
            **values,
        )
    except (SQLAlchemyError, OSError) as exc:
        log.write(
            f"could not record success in the database ({exc}); {queue.OUTCOME_FILE} and the checkpoint "
            f"are kept in {out_dir}, so the supervisor can record it, or the job can be resumed"
        )
        return EXIT_NOT_RECORDED
    if not recorded:
        log.write("note: the job had already been ended elsewhere; this outcome was not recorded")
        return 1
    queue.tidy_succeeded(out_dir)
    return 0
