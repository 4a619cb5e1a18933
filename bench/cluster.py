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

The Ray runner's figures (submit-to-first-metric latency, makespan on two nodes) come with
the Ray runner.
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--supervisors", type=int, default=4)
    args = p.parse_args()
    from tests.pg_server import running_server, wait_connectable, why_unavailable

    reason = why_unavailable()
    if reason:
        print(f"cannot start PostgreSQL: {reason}", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    rows = []
    with running_server() as server:
        wait_connectable(server)
        setups = [
            ("PostgreSQL, one host per supervisor", server.new_database(), False),
            ("PostgreSQL, all on one host", server.new_database(), True),
            ("SQLite (one machine)", f"sqlite:///{folder / 'claims.db'}", True),
        ]
        for label, url, same_host in setups:
            m = measure(url, args.jobs, args.supervisors, same_host, folder)
            twice = "none" if m["claimed"] == m["running"] == args.jobs else "SOME"
            rows.append(
                f"| {label} | {m['claimed']} | {m['seconds']:.2f} s | {m['claimed'] / m['seconds']:.0f} | "
                f"{' / '.join(map(str, m['per']))} | {twice} |"
            )
            print(rows[-1], flush=True)
    text = "\n".join([
        "# The job database under several supervisors",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPU cores, Python "
        f"{platform.python_version()}: `python bench/cluster.py --jobs {args.jobs} --supervisors "
        f"{args.supervisors}` (protocol: the script's docstring; the supervisors and the database server "
        "share these cores).",
        "",
        "## Claim rate",
        "",
        "| set-up | jobs claimed | time | claims/s | per supervisor | claimed twice |",
        "|---|---:|---:|---:|---|---|",
        *rows,
        "",
    ])  # fmt: skip
    REPORT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
