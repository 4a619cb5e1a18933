"""Ending the job of a worker that stopped without ending it itself.

A worker may die (killed, out of memory), hang, or lose its final database write.
Whoever notices (its supervisor reaping it, or a supervisor reconciling orphans) ends the
job here: succeeded if the worker left its outcome on disk (``jobs.queue.write_outcome``),
cancelled if a cancel was asked for, else failed, with the reason also noted in the job's
log. Each of these writes retries transient faults, since a job must never stay
``running`` because one write failed once.
"""

from __future__ import annotations

import logging
from pathlib import Path

from jobs.db import RETRY_ATTEMPTS, Database, retry
from jobs.queue import OUTCOME_FILE, read_outcome, tidy_succeeded
from jobs.schema import CANCELLED, FAILED, RUNNING, SUCCEEDED, Job, utcnow

UNEXPECTED = "worker stopped unexpectedly"
log = logging.getLogger("jobs.stopped_worker")


def end_stopped_worker(
    db: Database, job_id: int, reason: str, *, failure: str | None = None, attempts: int = RETRY_ATTEMPTS
) -> str | None:
    """A worker is gone without having ended its job: succeeded if it left its outcome on
    disk, else cancelled if asked, else failed (with ``failure`` as the error if given).

    Returns the message recorded, or None when the job had already ended. The message
    also goes to the job's log before the transaction commits, so whoever sees the job
    ended also finds the reason in its log. Transient faults are retried.
    """
    message = retry(
        lambda: _end_stopped_worker(db, job_id, reason, failure),
        what=f"job {job_id}: recording that its worker stopped",
        attempts=attempts,
    )
    if message is not None and message.startswith(SUCCEEDED):
        with db.read() as session:
            job = session.get(Job, job_id)
        if job is not None and job.artifact_dir:
            tidy_succeeded(Path(job.artifact_dir))
    return message


def _end_stopped_worker(db: Database, job_id: int, reason: str, failure: str | None) -> str | None:
    with db.write() as session:
        job = session.get(Job, job_id)
        if job is None or job.status != RUNNING:
            return None
        job.finished_at, job.eta_seconds = utcnow(), None
        outcome = read_outcome(job.artifact_dir)
        if outcome is not None:  # training had finished: a lost final write is no failure
            for name, value in outcome.items():
                setattr(job, name, value)
            job.status = SUCCEEDED
            message = (
                f"{SUCCEEDED}: the worker finished training but stopped before recording it "
                f"({reason}); recorded from its {OUTCOME_FILE}"
            )
        elif job.cancel_requested_at is not None:
            job.status = CANCELLED
            message = job.error = f"cancelled ({reason})"
        else:
            job.status, job.error_kind = FAILED, "crash"
            message = job.error = failure or f"{UNEXPECTED} ({reason})"
            job.error_detail = (job.error_detail or "") + (
                f"{job.error}. The last lines the worker wrote are in {job.log_path}."
            )
        if job.log_path:
            append_log_line(Path(job.log_path), f"supervisor: {message}")
        return message


def append_log_line(path: Path, message: str) -> bool:
    """Add a timestamped line to a job's log file (supervisor notes beside the worker's).

    Best effort: a full disk is retried briefly, then the line is dropped (False), since
    recording the job's end in the database matters more than the note in its log.
    """
    stamp = utcnow().strftime("%Y-%m-%d %H:%M:%S")

    def append() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} {message}\n")

    try:
        retry(append, what=f"writing to {path}", attempts=3, first_delay=0.2)
    except OSError as exc:
        log.warning("could not write to %s (%s): %s", path, exc, message)
        return False
    return True
