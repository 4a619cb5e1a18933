"""The database connection: one engine per process, short read and write transactions.

Default: one SQLite file in the data folder, in WAL mode (readers never block the
writer), with a busy timeout so concurrent writers wait instead of failing. Every
write transaction starts with ``BEGIN IMMEDIATE``: it takes SQLite's write lock up
front, so "read a queued job, then claim it" cannot interleave with another process
doing the same. PostgreSQL (``postgresql+psycopg://...``) works through the same code: its
claim locks rows ``FOR UPDATE SKIP LOCKED`` instead (``jobs.queue.claim_next``).

Engines are never shared across ``fork``: workers are fresh ``python -m`` processes
that open their own. ``?timeout=SECONDS`` on a SQLite URL sets the busy timeout (tests
use a short one to provoke "database is locked").

The busy timeout is not the end of it: a write that ends a job must not be lost because
another process held the lock a little longer (or the disk was full for a moment), so
those writes go through :func:`retry`, which retries such transient faults with backoff.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from backend.errors import WorkbenchError
from jobs import migrations

BUSY_TIMEOUT_MS = 30_000
RETRY_ATTEMPTS = 6  # with the delays below: about 15 s of waiting on top of the busy timeouts
RETRY_FIRST_DELAY = 0.5
RETRY_MAX_DELAY = 8.0
# A person's request (queue a job, store a dataset, cancel) waits through this many busy
# timeouts before it is refused: a lock held for 40 s (a backup, a long migration) then costs a
# slow click, not a failed one.
REQUEST_ATTEMPTS = 3
T = TypeVar("T")
log = logging.getLogger("jobs.db")


class DatabaseBusy(WorkbenchError):
    """A person's request could not be written: the database stayed locked (nothing changed)."""


def is_transient(exc: BaseException) -> bool:
    """A fault that may well be gone in a moment: a busy/locked database, a full disk."""
    if isinstance(exc, OperationalError):
        text = str(exc.orig if exc.orig is not None else exc).lower()
        return any(
            words in text
            # SQLite: locked/busy past the timeout, SQLITE_FULL (space may come back, as a lock
            # is released). PostgreSQL: a deadlock or serialisation victim, a server restarting.
            for words in ("locked", "busy", "disk is full", "deadlock detected", "could not serialize",
                          "the database system is starting up", "the database system is shutting down")
        )  # fmt: skip
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def retry(
    action: Callable[[], T],
    *,
    what: str,
    attempts: int = RETRY_ATTEMPTS,
    first_delay: float = RETRY_FIRST_DELAY,
    max_delay: float = RETRY_MAX_DELAY,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """Run ``action``; on a transient fault wait (doubling, capped) and try again.

    After ``attempts`` tries the last fault is raised; any other exception at once.
    ``on_retry(exc, delay)`` is told before each wait (e.g. to note it in a job's log).
    """
    delay = first_delay
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:
            if attempt == attempts or not is_transient(exc):
                raise
            log.warning("%s: %s; retrying in %.1f s (attempt %d/%d)", what, exc, delay, attempt, attempts)
            if on_retry is not None:
                on_retry(exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, max_delay)
    raise AssertionError("unreachable")  # the loop returns or raises


def busy_timeout_ms(url: str | URL) -> int:
    """The busy timeout for ``url``: its ``?timeout=SECONDS`` if given, else the default."""
    seconds = make_url(url).query.get("timeout")
    if isinstance(seconds, tuple):
        seconds = seconds[-1]
    return BUSY_TIMEOUT_MS if seconds is None else int(float(seconds) * 1000)


def sqlite_file(url: str | URL) -> Path | None:
    """The file behind a SQLite URL, or None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _configure_sqlite(engine: Engine, timeout_ms: int) -> None:
    """WAL, busy timeout, foreign keys; and let us choose how each transaction begins."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver's own implicit BEGIN would hide our BEGIN IMMEDIATE; turn it off
        # and emit BEGIN ourselves below (SQLAlchemy's documented pysqlite recipe).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {timeout_ms}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")  # safe in WAL; fsync only at checkpoints
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get("sqlite_immediate", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite files get their folder created and the pragmas above."""
    path = sqlite_file(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    timeout_ms = busy_timeout_ms(url)
    connect_args = {"timeout": timeout_ms / 1000} if is_sqlite else {}
    # pre_ping: a server database may have closed an idle pooled connection (a restart, a
    # proxy's timeout); the supervisor and the web app hold theirs for days.
    engine = create_engine(url, connect_args=connect_args, pool_pre_ping=not is_sqlite)
    if is_sqlite:
        _configure_sqlite(engine, timeout_ms)
    return engine


class Database:
    """An engine plus the two kinds of transaction the app uses.

    ``read()`` for queries, ``write()`` for changes (committed when the block ends,
    rolled back on an exception). Opening migrates the schema to the current version.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self._write_engine = self.engine.execution_options(sqlite_immediate=True)
        # Write transactions this object has begun: a reader's cache keyed on it knows that
        # this process changed something (other processes' writes it cannot see: cache briefly).
        self.generation = 0
        migrations.upgrade(self.engine)

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; nothing it changes is committed."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A session inside one write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        self.generation += 1  # before and after: a list read meanwhile is not kept
        try:
            with Session(self._write_engine, expire_on_commit=False) as session, session.begin():
                yield session
        finally:
            self.generation += 1

    def write_for_request(self, body: Callable[[Session], T], *, what: str) -> T:
        """``body(session)`` in one write transaction, tried again (from the start: the failed
        transaction was rolled back) while the database is locked. When it stays locked, a
        ``DatabaseBusy`` says that nothing was done instead of a raw driver error."""

        def attempt() -> T:
            with self.write() as session:
                return body(session)

        try:
            return retry(attempt, what=what, attempts=REQUEST_ATTEMPTS)
        except OperationalError as exc:
            if not is_transient(exc):
                raise
            waited = REQUEST_ATTEMPTS * busy_timeout_ms(self.url) / 1000
            if "disk is full" in str(exc).lower():  # the other transient fault: name it
                raise DatabaseBusy(
                    f"the disk holding the database is full, so {what} was not done and nothing "
                    "was saved; free some space and try again."
                ) from None
            raise DatabaseBusy(
                f"the database stayed locked by another process for over {waited:.0f} s, so {what} "
                "was not done and nothing was saved; try again in a minute."
            ) from None

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def take_turns(self, session: Session, key: str) -> None:
        """Make write transactions that name the same ``key`` run one after another (for a
        read-then-write such as "count the running jobs, then claim one"). PostgreSQL: an
        advisory lock held until the transaction ends. SQLite: nothing to do, its write
        transaction (BEGIN IMMEDIATE) already holds the whole file."""
        if self.is_postgres:
            session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})

    def dispose(self) -> None:
        """Close pooled connections (tests, and before a process exits)."""
        self.engine.dispose()
