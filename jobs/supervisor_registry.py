"""Who looks after the queue: the ``supervisors`` table, liveness, and in-process wake-ups.

Any number of supervisors may share one database. Each announces itself with a row and
keeps it fresh, so that a supervisor (or the service) can tell a job that is looked
after from an orphan whose supervisor died. Supervisors running in *this* process are
also known here directly: their liveness needs no heartbeat, and the service can wake
them when a job is submitted instead of waiting for their next poll.

Kept apart from ``jobs.supervisor`` so that the service can ask these questions without
the supervisor's loop, and apart from ``jobs.queue``, which moves jobs, not supervisors.
"""

from __future__ import annotations

import os
import threading
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, select, update

from jobs.db import Database
from jobs.runner import process_alive
from jobs.schema import SupervisorRow, utcnow

STALE_SECONDS = 60.0  # no heartbeat for this long: the process or its machine is gone
_LIVE_TOKENS: set[str] = set()  # supervisors running in this process
_WAKE_EVENTS: set[threading.Event] = set()  # one per supervisor running in this process


def fresh(at: Any, seconds: float) -> bool:
    """True if the timestamp ``at`` lies within the last ``seconds``."""
    return at is not None and utcnow() - at < timedelta(seconds=seconds)


# ---------------------------------------------------------------- supervisors in this process


def enter_process(token: str, wake: threading.Event) -> None:
    """A supervisor starts running in this process: alive, and woken by new submissions."""
    _LIVE_TOKENS.add(token)
    _WAKE_EVENTS.add(wake)


def leave_process(token: str, wake: threading.Event) -> None:
    """A supervisor in this process stopped running."""
    _LIVE_TOKENS.discard(token)
    _WAKE_EVENTS.discard(wake)


def wake_local_supervisors() -> None:
    """Tell supervisors in this process to look at the queue now (a job was just submitted),
    instead of at their next poll."""
    for event in list(_WAKE_EVENTS):
        event.set()


def owner_alive(row: SupervisorRow | None, host: str) -> bool:
    """Is the supervisor that claimed a job still running?"""
    if row is None:
        return False
    if row.host != host:
        return fresh(row.heartbeat_at, STALE_SECONDS)
    if row.pid == os.getpid():
        return row.token in _LIVE_TOKENS
    return process_alive(row.pid, row.process_started)


# ---------------------------------------------------------------- the supervisors table


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
