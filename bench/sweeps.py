"""Benchmark: what the sweep path costs on top of the runs themselves.

    .venv/bin/python bench/sweeps.py [--rows 500] [--ranks 2,4,8,16,32]

SST-2, a seeded sample of ``--rows`` training rows (a 10% split evaluates), LoRA at a fixed
learning rate (no search: its time would only add noise), one epoch, max length 64, one
worker at a time, on a fresh data folder. First the grid's runs are queued alone, one job
per rank; then the same grid as one sweep. Each side's time is its makespan (first job
queued -> last job finished: worker starts, model loads and the supervisor's polling
included on both sides). Target: the sweep at most 1.05x the runs alone. Writes
bench/SWEEPS.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SST2 = ROOT.parent / "shared" / "data" / "sst2"
REPORT = ROOT / "bench" / "SWEEPS.md"


def wait_all(bench: Any, ids: list[int], timeout: float = 3600) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [bench.get_job(i, log_tail=0) for i in ids]
        if all(j["status"] not in ("queued", "running") for j in jobs):
            return jobs
        time.sleep(0.2)
    raise SystemExit("the jobs did not finish in time")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=500)
    p.add_argument("--ranks", default="2,4,8,16,32")
    args = p.parse_args()
    if not SST2.is_dir():
        print(f"no shared data at {SST2}", file=sys.stderr)
        return 2
    import pandas as pd

    from jobs.supervisor import Supervisor
    from service.api import Workbench
    from tests.jobs.conftest import make_settings

    tmp = Path(tempfile.mkdtemp(prefix="bench-sweeps-"))
    train = tmp / "sst2.csv"
    pd.read_csv(SST2 / "train.csv").sample(n=args.rows, random_state=0).to_csv(train, index=False)
    bench = Workbench(make_settings(tmp))
    base = {"data": str(train), "method": "lora", "epochs": 1, "lr": 2e-3, "max_length": 64,
            "early_stopping_patience": 0}  # fmt: skip
    ranks = [int(r) for r in args.ranks.split(",")]
    supervisor = Supervisor(bench.settings, max_concurrent=1, poll_seconds=0.5).start()
    try:
        started = time.perf_counter()
        alone = wait_all(bench, [bench.submit({**base, "method_config": {"rank": r}}) for r in ranks])
        alone_seconds = time.perf_counter() - started
        started = time.perf_counter()
        sweep_id = bench.submit_sweep(base, grid=[f"rank={args.ranks}"])
        while bench.get_sweep(sweep_id)["status"] == "running":
            time.sleep(0.2)
        sweep_seconds = time.perf_counter() - started
        trials = bench.get_sweep(sweep_id)["trials"]
    finally:
        supervisor.stop(kill_workers=True)
    statuses = [j["status"] for j in alone] + [t["status"] for t in trials]
    ratio = sweep_seconds / alone_seconds
    text = "\n".join([
        "# Sweep overhead",
        "",
        f"`python bench/sweeps.py --rows {args.rows} --ranks {args.ranks}` (protocol: the script's "
        "docstring). Makespan, one worker, fresh data folder, both sides in one run.",
        "",
        "| | runs | makespan | per run |",
        "|---|---:|---:|---:|",
        f"| runs queued alone | {len(alone)} | {alone_seconds:.1f} s | {alone_seconds / len(alone):.1f} s |",
        f"| one grid sweep | {len(trials)} | {sweep_seconds:.1f} s | {sweep_seconds / len(trials):.1f} s |",
        "",
        f"Sweep / alone: **{ratio:.3f}x** (target ≤ 1.05x: {'met' if ratio <= 1.05 else 'MISSED'}). "
        f"Statuses: {', '.join(sorted(set(statuses)))}.",
        "",
    ])  # fmt: skip
    REPORT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
