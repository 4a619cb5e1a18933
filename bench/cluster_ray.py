"""The Ray runner's figures for bench/CLUSTER.md (run through ``bench/cluster.py --ray``).

On a real local Ray cluster (``tests/ray_cluster.py``: a head without CPUs and two worker
nodes of 2 CPUs each, on this one machine) and a throwaway PostgreSQL server:

- **Latency**: submit through the API -> the first metric row the worker writes (its
  ``time``), for the local runner and the Ray runner; one cold job (first of its runner),
  then ``--repeats`` warm ones, one at a time, each supervisor already running.
- **Makespan**: ``--ray-jobs`` jobs queued at once, the Ray runner with 2 CPUs per job (one
  job per node): wall time from the supervisor's start to the last job's end, against the
  sum of the jobs' own times (claim to end). Two nodes at best halve it; on this machine
  the two "nodes" share 2 cores, so the best to expect is well above 0.5.
- **Database load**: PostgreSQL transactions per second (``pg_stat_database.xact_commit``)
  while one job trains, minus the same supervisor idle: the writes one job costs.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from backend.settings import Settings
from jobs.schema import FINISHED, Job, Metric

JOB = {"method": "lora", "epochs": 1, "max_length": 16, "batch_size": 16, "lr": 5e-4}


def settings_for(root: Path, db_url: str, **changes: Any) -> Settings:
    models = Settings.from_env().models_cache
    return Settings(data_dir=root, models_cache=models, db_url=db_url).with_(**changes)


def wait_finished(bench: Any, ids: list[int], timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while any(bench.get_job(i, log_tail=0)["status"] not in FINISHED for i in ids):
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs {ids} did not finish in {timeout:.0f} s")
        time.sleep(0.2)
    failed = [j for j in (bench.get_job(i, log_tail=0) for i in ids) if j["status"] != "succeeded"]
    if failed:
        raise RuntimeError(f"job {failed[0]['id']} {failed[0]['status']}: {failed[0]['error']}")


def first_metric_time(settings: Settings, job_id: int) -> float:
    from sqlalchemy import func, select

    from jobs.db import Database

    db = Database(settings.db_url)
    with db.read() as session:
        first = session.scalar(select(func.min(Metric.time)).where(Metric.job_id == job_id))
    db.dispose()
    return float(first)


def latency(settings: Settings, data: Path, repeats: int) -> dict[str, Any]:
    """Seconds from submit to the first metric: the cold job, then the warm ones' median."""
    from jobs.supervisor import Supervisor
    from service.api import Workbench

    bench = Workbench(settings)
    supervisor = Supervisor(settings, poll_seconds=0.5).start()
    try:
        times = []
        for _ in range(repeats + 1):
            began = time.time()
            job_id = bench.submit({"data": str(data), **JOB})
            wait_finished(bench, [job_id])
            times.append(first_metric_time(settings, job_id) - began)
    finally:
        supervisor.stop(kill_workers=True)
    return {"cold": times[0], "warm": statistics.median(times[1:]), "all": times}


def makespan(settings: Settings, data: Path, jobs: int, dashboard: str) -> dict[str, Any]:
    """``jobs`` queued at once on the Ray runner: makespan against the sum of job times."""
    from ray.job_submission import JobSubmissionClient

    from jobs.db import Database
    from jobs.supervisor import Supervisor
    from service.api import Workbench

    bench = Workbench(settings)
    ids = [bench.submit({"data": str(data), **JOB}) for _ in range(jobs)]
    began = time.time()
    supervisor = Supervisor(settings, poll_seconds=0.5).start()
    try:
        wait_finished(bench, ids)
    finally:
        supervisor.stop(kill_workers=True)
    db = Database(settings.db_url)
    with db.read() as session:
        rows = [session.get(Job, i) for i in ids]
        spans = [(r.finished_at - r.started_at).total_seconds() for r in rows if r is not None]
        ended = max(r.finished_at for r in rows if r is not None)
    db.dispose()
    wall = ended.timestamp() - began if ended.tzinfo else _naive_utc(ended) - began
    listed = JobSubmissionClient(dashboard).list_jobs()
    nodes = {j.driver_node_id for j in listed if (j.submission_id or "").startswith("workbench-")}
    return {"makespan": wall, "sum": sum(spans), "jobs": len(spans), "nodes": len(nodes - {None})}


def _naive_utc(moment: Any) -> float:
    from datetime import timezone

    return float(moment.replace(tzinfo=timezone.utc).timestamp())


def counters(server: Any, url: str) -> tuple[int, int]:
    """(transactions committed, rows written) in the database so far."""
    name = url.rsplit("/", 1)[1]
    time.sleep(11)  # an idle backend flushes its statistics within 10 s (PGSTAT_IDLE_INTERVAL)
    query = (
        "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
        "WHERE datname = %s"
    )
    with server.admin() as conn:
        row = conn.execute(query, (name,)).fetchone()
    return int(row[0]), int(row[1])


def database_load(server: Any, settings: Settings, data: Path) -> dict[str, float]:
    """Transactions and rows written per second with the supervisor idle, then while one job
    trains (3 epochs); this script itself reads once every 5 s in both phases."""
    from jobs.supervisor import Supervisor
    from service.api import Workbench

    bench = Workbench(settings)
    supervisor = Supervisor(settings, poll_seconds=0.5).start()
    try:
        time.sleep(5)  # started and registered; the schema's own writes are flushed by counters()
        (c0, w0), t0 = counters(server, settings.db_url), time.monotonic()
        time.sleep(30)
        (c1, w1), t1 = counters(server, settings.db_url), time.monotonic()
        job_id = bench.submit({"data": str(data), **{**JOB, "epochs": 3}})
        while bench.get_job(job_id, log_tail=0)["status"] not in FINISHED:
            time.sleep(5)
        (c2, w2), t2 = counters(server, settings.db_url), time.monotonic()
    finally:
        supervisor.stop(kill_workers=True)
    idle = ((c1 - c0) / (t1 - t0), (w1 - w0) / (t1 - t0))
    busy = ((c2 - c1) / (t2 - t1), (w2 - w1) / (t2 - t1))
    return {
        "idle_tps": idle[0], "idle_rows": idle[1], "busy_tps": busy[0], "busy_rows": busy[1],
        "job_tps": busy[0] - idle[0], "job_rows": busy[1] - idle[1], "seconds": t2 - t1,
    }  # fmt: skip
