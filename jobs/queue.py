"""Job state transitions, each one short write transaction.

Every transition names the status it expects in its ``WHERE`` clause, so when two
parties race (a worker finishing while a supervisor declares it dead, two supervisors
claiming) exactly one wins and the other sees that it lost.

The writes that end a job retry transient faults (a database locked past its busy
timeout, a full disk while noting the reason in the log): a job must never stay
``running`` because one write failed once.

Here: claiming queued jobs, updating and ending running ones, cancel requests, and the
outcome file a worker leaves before its last write. Ending the job of a worker that
stopped without ending it lives in ``jobs.stopped_worker``; the supervisors' own rows
in ``jobs.supervisor_registry``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from backend.durable import replace_text
from backend.errors import ConfigError
from jobs.db import RETRY_ATTEMPTS, Database, retry
from jobs.schema import CANCELLED, QUEUED, RUNNING, Job, utcnow

# A finished run's job fields, written by the worker before it records success: if that
# write never lands, whoever ends the job records the success from this file instead.
OUTCOME_FILE = "outcome.json"
CLAIM_WINDOW = 100  # queued jobs looked at per claim when the oldest ones cannot run yet


def wants_gpu(config: dict[str, Any] | None) -> bool:
    """Does a job run on whatever accelerator is free ("auto"), rather than a fixed device?"""
    return (config or {}).get("device", "auto") == "auto"


def insert_job(session: Session, artifacts_dir: Path, fields: dict[str, Any]) -> int:
    """Add a queued job row and name its folders after its id (inside ``session``)."""
    row = Job(**fields)
    session.add(row)
    session.flush()
    folder = artifacts_dir / f"job-{row.id}"
    row.artifact_dir, row.log_path = str(folder), str(folder / "job.log")
    return int(row.id)


def claim_next(
    db: Database,
    owner: str,
    host: str,
    only: Collection[int] | None = None,
    *,
    limit: int | None = None,
    gpus: int = 0,
) -> int | None:
    """Atomically move the oldest queued job that can run now (of ``only``) to running for ``owner``.
    Two supervisors never claim one job, on either engine.

    ``limit``: claim only while fewer than ``limit`` jobs run on ``host``, counted inside
    the same write transaction, so the limit holds across every supervisor on the
    database. ``gpus``: a job on device "auto" needs a GPU index that no running job on
    ``host`` holds, and keeps it in ``Job.gpu``. Returns the claimed id, or None.
    """
    with db.write() as session:
        # SQLite: BEGIN IMMEDIATE already serialises every claim. PostgreSQL: claims from
        # one host take turns (so the running count below cannot be read by two at once), and
        # the queued rows are locked FOR UPDATE SKIP LOCKED, so other hosts claim other jobs.
        db.take_turns(session, f"claim on {host}")
        held = list(session.scalars(select(Job.gpu).where(Job.status == RUNNING, Job.worker_host == host)))
        if limit is not None and len(held) >= limit:
            return None
        free_gpus = [i for i in range(gpus) if i not in held]
        query = (
            select(Job.id, Job.config)
            .where(Job.status == QUEUED)
            .order_by(Job.id)
            .limit(CLAIM_WINDOW)
            .with_for_update(skip_locked=True)  # SQLite renders nothing here: it locks the file
        )
        if only is not None:
            query = query.where(Job.id.in_(list(only)))
        for job_id, config in session.execute(query).all():
            gpu = free_gpus[0] if gpus and wants_gpu(config) and free_gpus else None
            if gpus and wants_gpu(config) and gpu is None:
                continue  # every GPU is busy: a later CPU job may still run
            return job_id if _claim(session, job_id, owner, host, gpu) else None
        return None


def _claim(session: Session, job_id: int, owner: str, host: str, gpu: int | None) -> bool:
    now = utcnow()
    # The status guard keeps this safe even where BEGIN IMMEDIATE does not exist.
    claimed = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == QUEUED)
        .values(
            status=RUNNING,
            claimed_by=owner,
            worker_host=host,
            gpu=gpu,
            started_at=now,
            heartbeat_at=now,
            worker_pid=None,
            worker_started=None,
            progress=0.0,
        )
        .execution_options(synchronize_session=False)
    )
    return claimed.rowcount == 1


def take_over(db: Database, job_id: int, old_owner: str | None, new_owner: str) -> bool:
    """Make ``new_owner`` the supervisor of a running job whose owner stopped."""
    owner_is = Job.claimed_by.is_(None) if old_owner is None else Job.claimed_by == old_owner
    with db.write() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == RUNNING, owner_is)
            .values(claimed_by=new_owner)
            .execution_options(synchronize_session=False)
        )
        return result.rowcount == 1


def update_running(db: Database, job_id: int, **values: Any) -> bool:
    """Set fields of a job that is still running; False if it no longer is."""
    with db.write() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == RUNNING)
            .values(**values)
            .execution_options(synchronize_session=False)
        )
        return result.rowcount == 1


def finish(
    db: Database,
    job_id: int,
    status: str,
    *,
    attempts: int = RETRY_ATTEMPTS,
    on_retry: Callable[[BaseException, float], None] | None = None,
    **values: Any,
) -> bool:
    """End a running job with ``status``; False if something else ended it first.

    Transient faults are retried ``attempts`` times (``on_retry`` is told of each); after
    that the last one is raised.
    """
    at = utcnow()
    return retry(
        lambda: update_running(db, job_id, status=status, finished_at=at, eta_seconds=None, **values),
        what=f"job {job_id}: recording {status}",
        attempts=attempts,
        on_retry=on_retry,
    )


# ---------------------------------------------------------------- outcome hand-off


def write_outcome(out_dir: Path, values: dict[str, Any]) -> None:
    """Save a finished run's job fields durably (temporary file, fsync, atomic rename)."""
    replace_text(out_dir / OUTCOME_FILE, json.dumps(values))


def read_outcome(artifact_dir: str | None) -> dict[str, Any] | None:
    """The fields a worker left in ``artifact_dir`` (only known job columns), or None."""
    path = Path(artifact_dir or "") / OUTCOME_FILE
    if not artifact_dir or not path.is_file():
        return None
    try:
        values = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # unreadable: the job fails as it would have without the file
    if not isinstance(values, dict):
        return None
    return {k: v for k, v in values.items() if k in Job.__table__.columns}


def tidy_succeeded(out_dir: Path) -> None:
    """Once success is recorded: drop the checkpoint (a finished run is not resumed, and a
    checkpoint can be as big as the model) and the outcome hand-off file."""
    shutil.rmtree(out_dir / "checkpoint", ignore_errors=True)
    (out_dir / OUTCOME_FILE).unlink(missing_ok=True)


def request_cancel(db: Database, job_id: int) -> str:
    """Cancel a queued job at once, or ask a running one to stop; returns the new status."""

    def cancel(session: Session) -> str:
        job = session.get(Job, job_id)
        if job is None:
            raise ConfigError(f"no job {job_id}")
        if job.status == QUEUED:
            job.status, job.finished_at = CANCELLED, utcnow()
        elif job.status == RUNNING:
            job.cancel_requested_at = job.cancel_requested_at or utcnow()
        else:
            raise ConfigError(f"job {job_id} already finished ({job.status}); nothing to cancel")
        return job.status

    return db.write_for_request(cancel, what=f"cancelling job {job_id}")


def running_jobs(db: Database) -> list[Job]:
    """Every job currently marked running, oldest first."""
    with db.read() as session:
        return list(session.scalars(select(Job).where(Job.status == RUNNING).order_by(Job.id)))


def cancel_requests(db: Database, job_ids: Sequence[int]) -> dict[int, Any]:
    """When cancel was requested, for those of ``job_ids`` that are running and asked to stop."""
    if not job_ids:
        return {}
    with db.read() as session:
        rows = session.execute(
            select(Job.id, Job.cancel_requested_at).where(
                Job.id.in_(job_ids), Job.status == RUNNING, Job.cancel_requested_at.is_not(None)
            )
        )
        return {job_id: at for job_id, at in rows}
