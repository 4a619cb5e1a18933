"""Job state transitions, each one short write transaction.

Every transition names the status it expects in its ``WHERE`` clause, so when two
parties race (a worker finishing while a supervisor declares it dead, two supervisors
claiming) exactly one wins and the other sees that it lost.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update

from backend.errors import ConfigError
from jobs.db import Database
from jobs.schema import (
    CANCELLED,
    FAILED,
    QUEUED,
    RUNNING,
    Job,
    SupervisorRow,
    utcnow,
)

UNEXPECTED = "worker stopped unexpectedly"


def claim_next(db: Database, owner: str, host: str, only: Collection[int] | None = None) -> int | None:
    """Atomically move the oldest queued job (of ``only``, if given) to running for ``owner``.

    Returns the claimed job's id, or None when there is nothing to claim.
    """
    now = utcnow()
    query = select(Job.id).where(Job.status == QUEUED).order_by(Job.id).limit(1)
    if only is not None:
        query = query.where(Job.id.in_(list(only)))
    with db.write() as session:
        job_id = session.scalar(query)
        if job_id is None:
            return None
        # The status guard keeps this safe even where BEGIN IMMEDIATE does not exist.
        claimed = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == QUEUED)
            .values(
                status=RUNNING,
                claimed_by=owner,
                worker_host=host,
                started_at=now,
                heartbeat_at=now,
                worker_pid=None,
                worker_started=None,
                progress=0.0,
            )
            .execution_options(synchronize_session=False)
        )
        return job_id if claimed.rowcount == 1 else None


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


def finish(db: Database, job_id: int, status: str, **values: Any) -> bool:
    """End a running job with ``status``; False if something else ended it first."""
    return update_running(db, job_id, status=status, finished_at=utcnow(), eta_seconds=None, **values)


def end_stopped_worker(db: Database, job_id: int, reason: str) -> str | None:
    """A worker is gone without having ended its job: cancelled if asked, else failed.

    Returns the message recorded, or None when the job had already ended. The message
    also goes to the job's log before the transaction commits, so whoever sees the job
    ended also finds the reason in its log.
    """
    with db.write() as session:
        job = session.get(Job, job_id)
        if job is None or job.status != RUNNING:
            return None
        job.finished_at, job.eta_seconds = utcnow(), None
        if job.cancel_requested_at is not None:
            job.status, job.error = CANCELLED, f"cancelled ({reason})"
        else:
            job.status, job.error_kind = FAILED, "crash"
            job.error = f"{UNEXPECTED} ({reason})"
            job.error_detail = (job.error_detail or "") + (
                f"{job.error}. The last lines the worker wrote are in {job.log_path}."
            )
        if job.log_path:
            append_log_line(Path(job.log_path), f"supervisor: {job.error}")
        return job.error


def append_log_line(path: Path, message: str) -> None:
    """Add a timestamped line to a job's log file (supervisor notes beside the worker's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = utcnow().strftime("%Y-%m-%d %H:%M:%S")
    with path.open("a", encoding="utf-8") as f:
        f.write(f"{stamp} {message}\n")


def request_cancel(db: Database, job_id: int) -> str:
    """Cancel a queued job at once, or ask a running one to stop; returns the new status."""
    with db.write() as session:
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


# ---------------------------------------------------------------- supervisors


def register_supervisor(db: Database, row: SupervisorRow) -> None:
    """Announce a live supervisor (it heartbeats while it runs)."""
    with db.write() as session:
        session.merge(row)


def supervisor_heartbeat(db: Database, token: str) -> None:
    """Keep a supervisor's row fresh."""
    with db.write() as session:
        session.execute(
            update(SupervisorRow).where(SupervisorRow.token == token).values(heartbeat_at=utcnow())
        )


def remove_supervisor(db: Database, token: str) -> None:
    """A supervisor stopped cleanly."""
    with db.write() as session:
        session.execute(delete(SupervisorRow).where(SupervisorRow.token == token))


def supervisors(db: Database) -> dict[str, SupervisorRow]:
    """Every supervisor row (live or stale), by token."""
    with db.read() as session:
        return {row.token: row for row in session.scalars(select(SupervisorRow))}


def fresh(at: Any, seconds: float) -> bool:
    """True if the timestamp ``at`` lies within the last ``seconds``."""
    return at is not None and utcnow() - at < timedelta(seconds=seconds)
