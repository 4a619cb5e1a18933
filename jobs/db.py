"""The database connection: one engine per process, short read and write transactions.

Default: one SQLite file in the data folder, in WAL mode (readers never block the
writer), with a busy timeout so concurrent writers wait instead of failing. Every
write transaction starts with ``BEGIN IMMEDIATE``: it takes SQLite's write lock up
front, so "read a queued job, then claim it" cannot interleave with another process
doing the same. Any other SQLAlchemy URL (e.g. a server database later) works too.

Engines are never shared across ``fork``: workers are fresh ``python -m`` processes
that open their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.orm import Session

from jobs import migrations

BUSY_TIMEOUT_MS = 30_000


def sqlite_file(url: str | URL) -> Path | None:
    """The file behind a SQLite URL, or None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _configure_sqlite(engine: Engine) -> None:
    """WAL, busy timeout, foreign keys; and let us choose how each transaction begins."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver's own implicit BEGIN would hide our BEGIN IMMEDIATE; turn it off
        # and emit BEGIN ourselves below (SQLAlchemy's documented pysqlite recipe).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
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
    connect_args = {"timeout": BUSY_TIMEOUT_MS / 1000} if is_sqlite else {}
    engine = create_engine(url, connect_args=connect_args)
    if is_sqlite:
        _configure_sqlite(engine)
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
        migrations.upgrade(self.engine)

    @contextlib.contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; nothing it changes is committed."""
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextlib.contextmanager
    def write(self) -> Iterator[Session]:
        """A session inside one write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        with Session(self._write_engine, expire_on_commit=False) as session, session.begin():
            yield session

    def dispose(self) -> None:
        """Close pooled connections (tests, and before a process exits)."""
        self.engine.dispose()
