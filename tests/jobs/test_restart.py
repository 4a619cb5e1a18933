"""Supervisors dying, restarting and running side by side on one database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from backend.settings import PROJECT_ROOT, Settings
from jobs.runner import process_alive
from jobs.schema import Job
from jobs.supervisor import Supervisor
from jobs.supervisor_registry import supervisors as live_supervisors
from service.api import Workbench
from tests.jobs.conftest import (
    app_env,
    long_job,
    paced_job,
    quick_job,
    wait_for,
    wait_running_step,
    wait_status,
)

CLAIMER = """
import sys
from jobs.db import Database
from jobs.queue import claim_next
db = Database(sys.argv[1])
while (job_id := claim_next(db, sys.argv[2], "test-host")) is not None:
    print(job_id, flush=True)
"""


def test_killed_supervisor_loses_no_job_and_the_stale_one_is_reconciled(
    bench: Workbench, processes: Callable[..., subprocess.Popen[str]], data_dir: Path
) -> None:
    stale = bench.submit(long_job(data_dir / "long.csv"))
    waiting = bench.submit(quick_job(data_dir / "tiny.csv", method="probe"))
    first = processes("worker")
    job = wait_running_step(bench, stale)
    # The machine "reboots": supervisor and worker die without a word.
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    os.killpg(job["worker_pid"], signal.SIGKILL)
    wait_for(lambda: not process_alive(job["worker_pid"], None), 10, "the worker to die")
    assert bench.get_job(stale)["status"] == "running"  # nobody has noticed yet
    assert bench.get_job(waiting)["status"] == "queued"

    processes("worker")
    failed = wait_status(bench, stale, timeout=30)
    assert failed["status"] == "failed"
    assert failed["error"] == "worker stopped unexpectedly (found dead at supervisor start)"
    assert wait_status(bench, waiting)["status"] == "succeeded"


def test_restarted_supervisor_adopts_a_live_worker(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    job_id = bench.submit(paced_job(data_dir, epochs=3))
    old = supervisors()
    wait_running_step(bench, job_id)
    old.stop()  # like an app restart: the worker keeps training
    new = supervisors()
    wait_for(lambda: job_id in new.handles, 15, "the new supervisor to adopt the job")
    assert wait_status(bench, job_id)["status"] == "succeeded"
    with bench.db.read() as session:
        assert session.get(Job, job_id).claimed_by == new.token


def test_two_supervisors_never_run_one_job_twice(
    bench: Workbench, processes: Callable[..., subprocess.Popen[str]], data_dir: Path
) -> None:
    # Both supervisors are up before the jobs exist: a loaded machine took longer to start the
    # second process than the first took to run all four jobs. Two machines' worth: each its own
    # host name, so each its own limit of one. On one host name they shared one limit, and the
    # supervisor that had just finished a job claimed the next before the other polled (all
    # four, about 1 run in 16). Paced (a few seconds each), so that one job keeps a supervisor busy
    # while the other claims the next.
    processes("worker", "--max-concurrent", "1", host="machine-a")
    processes("worker", "--max-concurrent", "1", host="machine-b")
    wait_for(lambda: len(live_supervisors(bench.db)) == 2, 120, "both worker processes' supervisors")
    ids = [bench.submit(paced_job(data_dir, epochs=2, seed=i)) for i in range(4)]
    jobs = [wait_status(bench, i) for i in ids]
    assert [j["status"] for j in jobs] == ["succeeded"] * 4
    for job_id in ids:
        log = bench.get_job(job_id, log_tail=1000)["log"]
        assert sum("worker started" in line for line in log) == 1, log
    with bench.db.read() as session:
        rows = [session.get(Job, i) for i in ids]
    # both took part, each running its own jobs on its own host
    assert {r.worker_host for r in rows} == {"machine-a", "machine-b"}
    owners = {r.claimed_by for r in rows}
    assert len(owners) == 2 and all(r.claimed_by.startswith(r.worker_host + ":") for r in rows)


def test_claims_are_atomic_across_processes(bench: Workbench, settings: Settings, data_dir: Path) -> None:
    ids = {bench.submit(quick_job(data_dir / "tiny.csv")) for _ in range(40)}
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, settings.db_url, f"claimer-{n}"],
            cwd=PROJECT_ROOT,
            env=app_env(settings),
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    claimed = [int(line) for proc in claimers for line in proc.communicate(timeout=120)[0].split()]
    assert sorted(claimed) == sorted(ids)  # every job exactly once
    assert all(proc.returncode == 0 for proc in claimers)
