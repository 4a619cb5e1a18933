"""Benchmark: the job database under several supervisors (issue 12's figures).

    .venv/bin/python bench/cluster.py [--jobs 2000] [--supervisors 4]

**Claim rate.** ``--jobs`` queued job rows, then ``--supervisors`` separate processes that
each call ``jobs.queue.claim_next`` in a loop until the queue is empty, as a supervisor's poll
does (no worker is started: this measures the database's side of the claim). Three set-ups:
PostgreSQL with every supervisor on its own host (``FOR UPDATE SKIP LOCKED``, the team set-up),
PostgreSQL with all of them on one host (they take turns, so the per-host limit holds), and
SQLite on one machine (``BEGIN IMMEDIATE``). Each reports claims per second and checks that
no job was claimed twice. The PostgreSQL server is a throwaway one (``tests/pg_server.py``).
Writes bench/CLUSTER.md.

**The Ray runner** (``--ray``; ``bench/cluster_ray.py`` says how): submit-to-first-metric
latency for the local and the Ray runner, ``--ray-jobs`` jobs on two Ray nodes (makespan
against the sum of job times), and the database writes one training job costs, from which
the 100-GPU estimate in the report is worked out.

``--only claims`` or ``--only ray`` measures one part; the report keeps the other part's
section from its previous run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REPORT = ROOT / "bench" / "CLUSTER.md"


def fill_queue(url: str, jobs: int, folder: Path) -> None:
    from jobs import queue
    from jobs.db import Database
    from jobs.schema import QUEUED

    db = Database(url)
    with db.write() as session:
        for i in range(jobs):
            fields = {"name": f"job {i}", "status": QUEUED, "method": "lora", "model": "m", "quant": "none",
                      "config": {"device": "cpu"}}  # fmt: skip
            queue.insert_job(session, folder, fields)
    db.dispose()


def supervise(url: str, owner: str, host: str, start: Any, counts: Any) -> None:
    """One supervisor process: claim until the queue is empty."""
    from jobs import queue
    from jobs.db import Database

    db = Database(url)
    start.wait()
    claimed = 0
    while queue.claim_next(db, owner, host) is not None:
        claimed += 1
    counts[owner] = claimed
    db.dispose()


def measure(url: str, jobs: int, supervisors: int, same_host: bool, folder: Path) -> dict[str, Any]:
    from sqlalchemy import func, select

    from jobs.db import Database
    from jobs.schema import RUNNING, Job

    fill_queue(url, jobs, folder)
    ctx = multiprocessing.get_context("spawn")
    start, counts = ctx.Event(), ctx.Manager().dict()
    names = [f"supervisor-{i}" for i in range(supervisors)]
    procs = [
        ctx.Process(target=supervise, args=(url, name, "host-0" if same_host else f"host-{i}", start, counts))
        for i, name in enumerate(names)
    ]
    for p in procs:
        p.start()
    time.sleep(3)  # every process has imported and connected
    began = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
    seconds = time.perf_counter() - began
    db = Database(url)
    with db.read() as session:
        running = session.scalar(select(func.count()).select_from(Job).where(Job.status == RUNNING))
        owners = session.scalar(select(func.count(func.distinct(Job.claimed_by))))
    db.dispose()
    per = [counts.get(n, 0) for n in names]
    return {"seconds": seconds, "claimed": sum(per), "per": per, "running": running, "owners": owners}


def claim_rows(server: Any, jobs: int, supervisors: int, folder: Path) -> list[str]:
    rows = []
    setups = [
        ("PostgreSQL, one host per supervisor", server.new_database(), False),
        ("PostgreSQL, all on one host", server.new_database(), True),
        ("SQLite (one machine)", f"sqlite:///{folder / 'claims.db'}", True),
    ]
    for label, url, same_host in setups:
        m = measure(url, jobs, supervisors, same_host, folder)
        twice = "none" if m["claimed"] == m["running"] == jobs else "SOME"
        rows.append(
            f"| {label} | {m['claimed']} | {m['seconds']:.2f} s | {m['claimed'] / m['seconds']:.0f} | "
            f"{' / '.join(map(str, m['per']))} | {twice} |"
        )
        print(rows[-1], flush=True)
    return [
        "## Claim rate",
        "",
        f"`--jobs {jobs} --supervisors {supervisors}`: no worker starts; this is the database's side.",
        "",
        "| set-up | jobs claimed | time | claims/s | per supervisor | claimed twice |",
        "|---|---:|---:|---:|---|---|",
        *rows,
    ]


def sections(text: str) -> dict[str, str]:
    """A report's "## " sections by title (the part before the first one is left out)."""
    found: dict[str, str] = {}
    for chunk in text.split("\n## ")[1:]:
        title = chunk.split("\n", 1)[0]
        found[title] = "## " + chunk.rstrip() + "\n"
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--supervisors", type=int, default=4)
    p.add_argument("--ray-jobs", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3, help="warm jobs per runner for the latency")
    p.add_argument("--only", choices=("claims", "ray"))
    args = p.parse_args()
    from tests.pg_server import running_server, wait_connectable, why_unavailable

    reason = why_unavailable()
    if reason:
        print(f"cannot start PostgreSQL: {reason}", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    kept = sections(REPORT.read_text()) if REPORT.exists() else {}
    with running_server() as server:
        wait_connectable(server)
        if args.only != "ray":
            claims = "\n".join(claim_rows(server, args.jobs, args.supervisors, folder)) + "\n"
            kept["Claim rate"] = claims
        if args.only != "claims":
            from bench.cluster_report import ray_sections

            kept.update(ray_sections(server, folder, args.ray_jobs, args.repeats))
    text = "\n".join([
        "# The job database and the Ray runner under load",
        "",
        f"Last measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}: `python bench/cluster.py {' '.join(sys.argv[1:])}`"
        " (protocol: the scripts' docstrings; every process and the database server share these cores).",
        "",
        *kept.values(),
    ])  # fmt: skip
    REPORT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
