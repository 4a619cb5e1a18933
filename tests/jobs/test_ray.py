"""Jobs on a real local Ray cluster (a head and a worker node), through the Ray Jobs API.

Marked ``ray``: a cluster takes ~20 s to start, and each scenario trains real jobs on its
node. The jobs test runs with the database on SQLite and on PostgreSQL (a cluster's nodes
reach the database through its URL, a password included for PostgreSQL); the scenarios of Ray's
own (cancel, a lost node, adoption) run on SQLite. The supervisor claims from the database and
submits to Ray; the worker on the Ray node writes progress and metrics to the database as a
local worker does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.errors import ConfigError
from backend.settings import Settings
from jobs.db import Database
from jobs.ray_runner import RayRunner, submission_id
from jobs.schema import Job
from service.api import Workbench
from tests.jobs.conftest import (
    long_job,
    quick_job,
    supervisor_pool,
    wait_for,
    wait_running_step,
    wait_status,
)
from tests.ray_cluster import RayCluster, running_cluster, why_unavailable

pytestmark = pytest.mark.ray
ENDED_BY_CANCEL = ("STOPPED", "SUCCEEDED")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    with running_cluster() as running:
        yield running


@pytest.fixture
def ray_settings(settings: Settings, cluster: RayCluster) -> Settings:
    return settings.with_(runner="ray", ray_address=cluster.dashboard_url).check_runner()


@pytest.fixture
def start_supervisor(ray_settings: Settings) -> Iterator[Any]:
    with supervisor_pool(ray_settings) as start:  # as many jobs at once as the cluster has slots
        yield start


def started_long_job(settings: Settings, start_supervisor: Any, data_dir: Path) -> tuple[Workbench, int]:
    """A long job, running on the cluster and past its first training step."""
    bench = Workbench(settings)
    job_id = bench.submit(long_job(data_dir / "long.csv"))
    start_supervisor()
    wait_running_step(bench, job_id)
    return bench, job_id


def ray_jobs(cluster: RayCluster) -> dict[str, str]:
    """Every submission the cluster knows: submission id -> status."""
    from ray.job_submission import JobSubmissionClient

    listed = JobSubmissionClient(cluster.dashboard_url).list_jobs()
    return {j.submission_id: str(j.status.value) for j in listed if j.submission_id}


def ray_id(settings: Settings, job_id: int) -> str:
    with Database(settings.db_url).read() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return submission_id(job)


def test_jobs_run_as_ray_jobs_and_write_their_metrics(
    ray_settings: Settings, cluster: RayCluster, start_supervisor: Any, data_dir: Path
) -> None:
    bench = Workbench(ray_settings)
    ids = [bench.submit(quick_job(data_dir / "tiny.csv", lr=5e-4)) for _ in range(3)]
    sup = start_supervisor()
    assert sup.max_concurrent == 2  # the worker node's 2 CPUs, one per job
    for job_id in ids:
        job = wait_status(bench, job_id)
        assert job["status"] == "succeeded", job["error"]
        assert job["accuracy"] is not None and job["series"], "metrics reach the database"
        assert job["where"] and "cpu" in job["where"], job["where"]
    # Once recorded, a job's Ray record is deleted (list_jobs holds the jobs in flight, not every
    # job ever run) after its Ray log and final status went into the job's own log.
    refs = [ray_id(ray_settings, i) for i in ids]
    wait_for(lambda: not set(refs) & set(ray_jobs(cluster)), 60, "the 3 Ray jobs to be released")
    for job_id, ref in zip(ids, refs, strict=True):
        log = bench.get_job(job_id, log_tail=400)["log"]
        assert any(f"its Ray job {ref} ended SUCCEEDED" in line for line in log), log[-5:]
        assert any("Running entrypoint for job" in line for line in log), "Ray's log tail is kept"


@pytest.mark.engines("sqlite")  # Ray's side; both engines: the test above
def test_a_cluster_whose_python_lacks_a_workbench_module_is_refused_with_advice(
    ray_settings: Settings, cluster: RayCluster
) -> None:
    """The probe job runs with the jobs' own code and environment; a node without a module the
    worker needs would fail every job after it starts, so the supervisor refuses at once."""
    runner = RayRunner(ray_settings)
    runner.check_environment(("sqlalchemy", "jobs.worker"))  # what the project's Python has
    with pytest.raises(ConfigError, match=r"cannot import 'no_such_module_xyz'.*start Ray from the project"):
        runner.check_environment(("sqlalchemy", "no_such_module_xyz"))
    wait_for(
        lambda: not [r for r in ray_jobs(cluster) if r.startswith("workbench-probe-")], 60, "no probe left"
    )


@pytest.mark.engines("sqlite")  # Ray's side; both engines: the test above
def test_cancel_ends_the_ray_job(
    ray_settings: Settings, cluster: RayCluster, start_supervisor: Any, data_dir: Path
) -> None:
    bench, job_id = started_long_job(ray_settings, start_supervisor, data_dir)
    bench.cancel(job_id)
    assert wait_status(bench, job_id, timeout=60)["status"] == "cancelled"
    ref = ray_id(ray_settings, job_id)
    # Two ends are right, and which one comes is a race: the supervisor's stop_job reaches the
    # job first (STOPPED), or the worker's heartbeat saw the cancel request, recorded it and
    # exited on its own (SUCCEEDED: the process ended cleanly). Running on, or FAILED, is wrong.
    # Its final status is in the job's log, where the supervisor wrote it before deleting the
    # Ray job's record.
    seen: list[str] = []

    def ended() -> bool:
        lines = bench.get_job(job_id, log_tail=400)["log"]
        seen[:] = [line for line in lines if f"its Ray job {ref} ended" in line]
        return bool(seen)

    wait_for(ended, 30, "the Ray job to end and be released")
    assert any(f"ended {status};" in seen[-1] for status in ENDED_BY_CANCEL), seen[-1]


@pytest.mark.engines("sqlite")  # Ray's side; both engines: the test above
def test_a_killed_node_fails_its_job_and_the_queue_moves_on(
    ray_settings: Settings, cluster: RayCluster, start_supervisor: Any, data_dir: Path
) -> None:
    bench, job_id = started_long_job(ray_settings, start_supervisor, data_dir)
    cluster.kill_node(cluster.nodes[-1])  # the only node with CPUs: it runs the job
    job = wait_status(bench, job_id, timeout=90)
    assert job["status"] == "failed"
    assert "Ray job" in job["error"] or "heartbeat" in job["error"], job["error"]
    cluster.add_worker()
    nxt = bench.submit(quick_job(data_dir / "tiny.csv", lr=5e-4))
    assert wait_status(bench, nxt)["status"] == "succeeded"


@pytest.mark.engines("sqlite")  # Ray's side; both engines: the test above
def test_a_restarted_supervisor_adopts_the_running_ray_job(
    ray_settings: Settings, cluster: RayCluster, start_supervisor: Any, data_dir: Path
) -> None:
    bench = Workbench(ray_settings)
    job_id = bench.submit(long_job(data_dir / "long.csv"))
    first = start_supervisor()
    running = wait_running_step(bench, job_id)
    first.stop()  # its worker keeps running on the Ray node
    before = set(ray_jobs(cluster))
    second = start_supervisor()
    wait_for(lambda: job_id in second.handles, 30, "the new supervisor to adopt the job")
    ref = ray_id(ray_settings, job_id)
    assert second.handles[job_id].ref == ref and ray_jobs(cluster)[ref] == "RUNNING"
    # (records of earlier tests' jobs may be deleted meanwhile: only new ones count)
    assert not set(ray_jobs(cluster)) - before, "no second Ray job"
    step = running["step"]
    wait_for(lambda: (bench.get_job(job_id, log_tail=0)["step"] or 0) > step, 60, "training to go on")
    assert bench.get_job(job_id, log_tail=0)["worker_pid"] == running["worker_pid"]  # the same worker
    bench.cancel(job_id)
    assert wait_status(bench, job_id, timeout=60)["status"] == "cancelled"


@pytest.mark.engines("sqlite")  # Ray's side; both engines: the test above
def test_a_running_job_ray_never_heard_of_is_failed_as_vanished(
    ray_settings: Settings, start_supervisor: Any, data_dir: Path
) -> None:
    """A job left running by a supervisor of this host that died before submitting it."""
    import socket

    from jobs import queue

    bench = Workbench(ray_settings)
    job_id = bench.submit(quick_job(data_dir / "tiny.csv", lr=5e-4))
    host = socket.gethostname()
    assert queue.claim_next(Database(ray_settings.db_url), "a-dead-supervisor", host) == job_id
    start_supervisor()
    job = wait_status(bench, job_id, timeout=60)
    assert job["status"] == "failed" and "found dead at supervisor start" in job["error"], job["error"]
