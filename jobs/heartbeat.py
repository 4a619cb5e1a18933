"""How a running worker stays alive in the database and learns that it should stop.

A :class:`Heartbeat` thread keeps the job's row fresh through long phases without
steps (loading, evaluation, export) and picks up cancel requests. Cancel works in every
phase: the training loop polls for it at each step; in phases without steps (model
loading, evaluation, feature computation) the heartbeat thread, once it has seen the
request and given the loop ``STOP_GRACE_SECONDS``, sends the worker SIGTERM, which
:class:`StopSignal` turns into an exception in the main thread while training runs (the
supervisor sends SIGTERM too, and SIGKILL only after a further grace).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from jobs.db import Database
from jobs.reporting import beat
from jobs.schema import RUNNING, Job

HEARTBEAT_SECONDS = 5.0
CANCEL_POLL_SECONDS = 1.0  # the heartbeat thread reads the cancel flag this often
STOP_GRACE_SECONDS = 3.0  # time the training loop gets to stop at a step before SIGTERM


def stop_wanted(db: Database, job_id: int) -> bool:
    """A read: was cancel requested, or is the job no longer running?"""
    with db.read() as session:
        row = session.execute(select(Job.status, Job.cancel_requested_at).where(Job.id == job_id)).first()
    return row is None or row.status != RUNNING or row.cancel_requested_at is not None


class StopRequested(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM while training runs. A BaseException, so that
    library code catching ``Exception`` (loaders with fallbacks) cannot swallow it."""


class StopSignal:
    """Turns SIGTERM into :class:`StopRequested` in the main thread, only while armed.

    Armed around training alone: a SIGTERM while the outcome is being recorded is only
    noted, so it can never interrupt that write. Python runs signal handlers in the main
    thread between bytecodes, so the armed flag (set only there) needs no lock.
    """

    def __init__(self) -> None:
        self.armed = False
        self.received = False

    def install(self) -> StopSignal:
        signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if self.armed:
            self.armed = False  # once: the cancel that follows must be recorded undisturbed
            raise StopRequested("stop requested (SIGTERM)")

    @contextlib.contextmanager
    def armed_while(self) -> Iterator[None]:
        """Raise on SIGTERM inside the block (at once if one came before it)."""
        if self.received:
            raise StopRequested("stop requested (SIGTERM) before training started")
        self.armed = True
        try:
            yield
        finally:
            self.armed = False


def signal_self() -> None:
    """SIGTERM to this worker: what the supervisor would send, sent sooner."""
    os.kill(os.getpid(), signal.SIGTERM)


class Heartbeat(threading.Thread):
    """Keeps ``heartbeat_at`` fresh and notices cancel requests between steps.

    Once it sees a stop request it sets ``cancel`` (the training loop stops at its next
    step); if training has not stopped ``STOP_GRACE_SECONDS`` later (a phase without
    steps), it calls ``interrupt`` once.
    """

    def __init__(
        self, db: Database, job_id: int, cancel: threading.Event, interrupt: Callable[[], None] | None = None
    ) -> None:
        super().__init__(name=f"heartbeat-{job_id}", daemon=True)
        self.db, self.job_id, self.cancel, self.interrupt = db, job_id, cancel, interrupt
        self._stopped = threading.Event()

    def run(self) -> None:
        last_beat, stop_seen, interrupted = time.monotonic(), None, False
        while not self._stopped.wait(CANCEL_POLL_SECONDS):
            try:
                if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                    last_beat, wanted = time.monotonic(), beat(self.db, self.job_id, {}, [])
                else:
                    wanted = stop_wanted(self.db, self.job_id)
            except SQLAlchemyError:
                continue  # the next beat retries; the supervisor tolerates a missed one
            if wanted:
                self.cancel.set()
                stop_seen = stop_seen or time.monotonic()
            late = stop_seen is not None and time.monotonic() - stop_seen >= STOP_GRACE_SECONDS
            if late and not interrupted and self.interrupt is not None and not self._stopped.is_set():
                interrupted = True
                self.interrupt()

    def stop(self) -> None:
        self._stopped.set()
