"""Job bookkeeping under faults: retries, a global concurrency limit, hung workers, cancel
while loading, and a success whose final write was lost.

Real SQLite files and, where it matters, real worker processes; thresholds are shortened
through the supervisor's constructor so that no test waits for the production defaults.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from backend.settings import Settings
from jobs import queue, reconcile
from jobs.db import Database, is_transient, retry
from jobs.runner import process_alive
from jobs.schema import CANCELLED, FAILED, RUNNING, SUCCEEDED, Job, SupervisorRow, utcnow
from jobs.stopped_worker import end_stopped_worker
from jobs.supervisor import Supervisor
from jobs.supervisor_registry import enter_process, leave_process, register_supervisor
from service.api import Workbench
from tests.jobs.conftest import long_job, quick_job, wait_for, wait_running_step, wait_status

# ---------------------------------------------------------------- no processes


def locked() -> OperationalError:
    return OperationalError("UPDATE jobs", {}, Exception("database is locked"))


def test_retry_retries_transient_faults_only() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise locked() if len(calls) == 1 else OSError(errno.ENOSPC, "No space left on device")
        return "done"

    assert retry(flaky, what="test", first_delay=0.01) == "done" and len(calls) == 3
    assert is_transient(locked()) and not is_transient(OSError(errno.EACCES, "denied"))
    full = OperationalError("INSERT", {}, Exception("database or disk is full"))
    assert is_transient(full) and not is_transient(OperationalError("SELECT", {}, Exception("no such table")))
    with pytest.raises(OperationalError):
        retry(lambda: (_ for _ in ()).throw(locked()), what="test", attempts=2, first_delay=0.01)
    with pytest.raises(ValueError):  # not transient: raised at once
        retry(lambda: (_ for _ in ()).throw(ValueError("bug")), what="test", first_delay=10)


def add_job(db: Database, **fields: object) -> int:
    with db.write() as session:
        job = Job(name="j", method="lora", model="m", config=fields.pop("config", {}), **fields)
        session.add(job)
        session.flush()
        return job.id


def test_claims_count_every_supervisors_jobs_and_held_gpus(settings: Settings) -> None:
    db = Database(settings.db_url)
    gpu_jobs = [add_job(db) for _ in range(3)]
    cpu_job = add_job(db, config={"device": "cpu"})
    # Two supervisors of one host, a limit of 3 jobs and 2 GPUs between them.
    first = queue.claim_next(db, "a", "host", limit=3, gpus=2)
    second = queue.claim_next(db, "b", "host", limit=3, gpus=2)
    third = queue.claim_next(db, "a", "host", limit=3, gpus=2)  # no GPU left: the CPU job
    assert [first, second, third] == [gpu_jobs[0], gpu_jobs[1], cpu_job]
    assert queue.claim_next(db, "b", "host", limit=3, gpus=2) is None  # the limit holds
    assert queue.claim_next(db, "b", "other-host", limit=1, gpus=2) == gpu_jobs[2]  # its own machine
    with db.read() as session:
        assert [session.get(Job, i).gpu for i in (first, second, third)] == [0, 1, None]
    queue.finish(db, second, SUCCEEDED)
    assert queue.claim_next(db, "a", "host", limit=3, gpus=2) is None  # nothing queued any more


@pytest.mark.engines("sqlite")  # a worker's fault, not the engine's
def test_a_lost_success_is_recorded_from_the_outcome_file(tmp_path: Path, settings: Settings) -> None:
    db = Database(settings.db_url)
    out = tmp_path / "job"
    (out / "checkpoint" / "epoch-0001").mkdir(parents=True)
    job_id = add_job(db, status=RUNNING, artifact_dir=str(out), log_path=str(out / "job.log"))
    queue.write_outcome(out, {"accuracy": 0.75, "progress": 1.0, "summary": {"accuracy": 0.75}, "bogus": 1})
    message = end_stopped_worker(db, job_id, "exit code 3")
    assert message is not None and message.startswith("succeeded")
    with db.read() as session:
        job = session.get(Job, job_id)
    assert (job.status, job.accuracy, job.summary, job.error) == (SUCCEEDED, 0.75, {"accuracy": 0.75}, None)
    assert not (out / "checkpoint").exists() and not (out / queue.OUTCOME_FILE).exists()
    assert "recorded from its outcome.json" in (out / "job.log").read_text()


@pytest.mark.engines("sqlite")  # a worker's fault, not the engine's
def test_a_full_disk_does_not_keep_a_job_running(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(settings.db_url)
    job_id = add_job(db, status=RUNNING, log_path=str(tmp_path / "job.log"))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "open", full)
    assert end_stopped_worker(db, job_id, "exit code 1") == "worker stopped unexpectedly (exit code 1)"
    with db.read() as session:
        assert session.get(Job, job_id).status == FAILED


def test_a_supervisor_that_registers_and_claims_mid_reconcile_keeps_its_job(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Supervisor B reconciles while A registers and claims a job (the race behind a
    flaky two-supervisor run): A's fresh job must not be ended as an orphan."""
    db = Database(settings.db_url)
    job_id = add_job(db)
    b = Supervisor(settings, max_concurrent=1)
    a_token, a_wake = "a-token", threading.Event()
    real_running_jobs = reconcile.running_jobs

    def a_registers_and_claims_first(db_: Database) -> list[Job]:
        # What A's thread does between two of B's reads: register (alive, in this
        # process), then claim before it has a worker.
        if not queue.running_jobs(db_):
            enter_process(a_token, a_wake)
            me = psutil.Process()
            register_supervisor(
                db_,
                SupervisorRow(
                    token=a_token,
                    host=b.host,
                    pid=me.pid,
                    process_started=me.create_time(),
                    max_concurrent=1,
                    started_at=utcnow(),
                    heartbeat_at=utcnow(),
                ),
            )
            assert queue.claim_next(db_, a_token, b.host) == job_id
        return real_running_jobs(db_)

    monkeypatch.setattr(reconcile, "running_jobs", a_registers_and_claims_first)
    try:
        b.reconcile(at_start=False)
    finally:
        leave_process(a_token, a_wake)
        b.db.dispose()
    with db.read() as session:
        job = session.get(Job, job_id)
    assert (job.status, job.claimed_by, job.error) == (RUNNING, a_token, None)


# ---------------------------------------------------------------- real workers


def running_count(bench: Workbench) -> int:
    with bench.db.read() as session:
        return session.scalar(select(func.count()).where(Job.status == RUNNING)) or 0


def test_two_supervisors_with_limit_1_run_one_job_at_a_time(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    ids = [bench.submit(quick_job(data_dir / "tiny.csv", method="probe", seed=i)) for i in range(3)]
    supervisors(max_concurrent=1)
    supervisors(max_concurrent=1)
    most = 0

    def drained() -> bool:
        nonlocal most
        most = max(most, running_count(bench))
        return all(bench.get_job(i, log_tail=0)["status"] in ("succeeded", "failed") for i in ids)

    wait_for(drained, 240, "three jobs to finish", interval=0.05)
    assert most == 1
    assert [bench.get_job(i, log_tail=0)["status"] for i in ids] == ["succeeded"] * 3


@pytest.mark.engines("sqlite")  # a worker's fault, not the engine's
def test_a_hung_worker_is_killed_and_failed_and_the_queue_moves_on(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    hung = bench.submit(long_job(data_dir / "long.csv"))
    after = bench.submit(quick_job(data_dir / "tiny.csv", method="probe"))
    supervisors(hung_seconds=12)
    pid = wait_running_step(bench, hung)["worker_pid"]
    os.kill(pid, signal.SIGSTOP)  # alive, but silent: no heartbeat any more
    try:
        job = wait_status(bench, hung, timeout=60)
        assert job["status"] == "failed"
        assert job["error"].startswith("worker hung: no heartbeat for"), job["error"]
        wait_for(lambda: not process_alive(pid, None), 10, "the hung worker to be killed")
    finally:
        if process_alive(pid, None):
            os.kill(pid, signal.SIGCONT)
    assert wait_status(bench, after)["status"] == "succeeded"


@pytest.mark.engines("sqlite")  # a worker's fault, not the engine's
def test_cancel_while_the_model_loads(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    job_id = bench.submit(long_job(data_dir / "long.csv"))
    # A supervisor that would wait minutes before SIGTERM: the worker must stop by itself.
    supervisors(cancel_grace=600)
    wait_status(bench, job_id, ("running",), timeout=60)
    asked = time.monotonic()
    bench.cancel(job_id)
    job = wait_status(bench, job_id, timeout=60)
    assert job["status"] == CANCELLED, job["error"]
    assert time.monotonic() - asked < 60
    assert any("cancelled" in line for line in bench.get_job(job_id, log_tail=50)["log"])
