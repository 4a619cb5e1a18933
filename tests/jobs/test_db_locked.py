"""The database locked past its busy timeout while a job finishes: the job still succeeds.

Every process here (supervisor, worker, test) opens the database with a busy timeout of
one second (``?timeout=1`` on the URL, which the worker inherits), so that holding the
write lock for a few seconds makes every write fail with "database is locked".
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from backend.settings import Settings
from jobs import queue
from jobs.db import DatabaseBusy, sqlite_file
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import (
    kill_workers,
    make_settings,
    paced_job,
    quick_job,
    wait_for,
    wait_running_step,
    wait_status,
)


@pytest.fixture
def settings(tmp_path: Path) -> Iterator[Settings]:
    """Like the shared fixture, with a one-second busy timeout."""
    base = make_settings(tmp_path)
    s = replace(base, db_url=base.db_url + "?timeout=1")
    yield s
    kill_workers(s)


def test_the_database_locked_while_a_job_finishes(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path, settings: Settings
) -> None:
    db_file = sqlite_file(settings.db_url)
    assert db_file is not None
    job_id = bench.submit(paced_job(data_dir, epochs=1))
    supervisors()
    job = wait_running_step(bench, job_id)
    log_path = Path(bench.get_job(job_id, log_tail=0)["log_path"])
    release = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(db_file, release), daemon=True)
    holder.start()  # from here on, every write waits 1 s and fails: "database is locked"
    try:
        wait_for(lambda: "succeeded: accuracy" in log_path.read_text(), 90, "training to finish")
        time.sleep(4)  # several failed attempts at recording the success
    finally:
        release.set()
        holder.join(timeout=10)
    done = wait_status(bench, job_id, timeout=120)
    assert done["status"] == "succeeded", done["error"]
    log = log_path.read_text()
    assert "could not record success yet" in log
    # a locked database slows its progress writes down, not the training (jobs.reporting)
    assert "could not write progress (OperationalError); will retry in 2 s" in log
    assert not (Path(job["artifact_dir"]) / "checkpoint").exists()  # dropped once recorded
    assert not (Path(job["artifact_dir"]) / queue.OUTCOME_FILE).exists()


def hold_write_lock(path: Path, release: threading.Event) -> None:
    """Hold SQLite's write lock (``BEGIN IMMEDIATE``) until ``release`` is set."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        release.wait(300)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def held_lock(db_file: Path, seconds: float) -> threading.Thread:
    """Hold the write lock for ``seconds`` from now (in a thread)."""
    release = threading.Event()
    holder = threading.Thread(target=hold_write_lock, args=(db_file, release), daemon=True)
    holder.start()
    threading.Timer(seconds, release.set).start()
    time.sleep(0.2)  # the lock is taken
    return holder


def test_a_submission_waits_out_a_lock_longer_than_the_busy_timeout(
    bench: Workbench, data_dir: Path, settings: Settings
) -> None:
    db_file = sqlite_file(settings.db_url)
    assert db_file is not None
    before = len(bench.list_jobs())
    holder = held_lock(db_file, 2.5)  # 2.5 busy timeouts: the first attempt fails
    started = time.monotonic()
    job_id = bench.submit(quick_job(data_dir / "tiny.csv"))
    assert time.monotonic() - started >= 1.5
    holder.join(timeout=10)
    assert [j["id"] for j in bench.list_jobs()] == [job_id] and len(bench.list_jobs()) == before + 1
    assert bench.cancel(job_id)["status"] == "cancelled"


def test_a_lock_that_outlasts_every_attempt_is_a_clear_error_and_changes_nothing(
    bench: Workbench, data_dir: Path, settings: Settings
) -> None:
    db_file = sqlite_file(settings.db_url)
    assert db_file is not None
    bench.register_dataset(data_dir / "tiny.csv")  # the dataset row exists; only the job is new
    holder = held_lock(db_file, 7.0)  # 3 attempts of 1 s plus 1.5 s of waits: all fail
    with pytest.raises(DatabaseBusy, match=r"locked by another process for over 3 s, so queueing the job"):
        bench.submit(quick_job(data_dir / "tiny.csv"))
    holder.join(timeout=20)
    assert bench.list_jobs() == []
