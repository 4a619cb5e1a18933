"""Benchmark: what the sweep path costs on top of the runs themselves.

    .venv/bin/python bench/sweeps.py [--rows 500] [--ranks 2,4,8,16,32]

SST-2, a seeded sample of ``--rows`` training rows (a 10% split evaluates), LoRA at a fixed
learning rate (no search: its time would only add noise), one epoch, max length 64, one
worker at a time, on a fresh data folder. First the grid's runs are queued alone, one job
per rank; then the same grid as one sweep; then (``--pairs 2``, the default) the sweep again
and the runs alone again. Each round's time is its makespan (first job queued -> last job
finished: worker starts, model loads and the supervisor's polling included on both sides).
Target: the sweep at most 1.05x the runs alone. Writes bench/SWEEPS.md.
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
    p.add_argument("--pairs", type=int, default=2, choices=(1, 2), help="1: alone, sweep; 2: A-B-B-A")
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
    rows: list[tuple[str, int, float]] = []  # (side, runs, makespan)
    statuses: set[str] = set()
    try:
        # A-B-B-A: both sides see the same drift (disk cache, other load, the CPU's clock),
        # which one pair per side does not cancel: a run's time varies by ±3 s here.
        for side in ["alone", "sweep", "sweep", "alone"][: 2 * args.pairs]:
            started = time.perf_counter()
            if side == "alone":
                ids = [bench.submit({**base, "method_config": {"rank": r}}) for r in ranks]
                statuses |= {j["status"] for j in wait_all(bench, ids)}
            else:
                sweep_id = bench.submit_sweep(base, grid=[f"rank={args.ranks}"])
                while bench.get_sweep(sweep_id)["status"] == "running":
                    time.sleep(0.2)
                statuses |= {t["status"] for t in bench.get_sweep(sweep_id)["trials"]}
            rows.append((side, len(ranks), time.perf_counter() - started))
            print(f"{side}: {rows[-1][2]:.1f} s", flush=True)
    finally:
        supervisor.stop(kill_workers=True)
    alone_seconds = sum(t for side, _, t in rows if side == "alone")
    sweep_seconds = sum(t for side, _, t in rows if side == "sweep")
    ratio = sweep_seconds / alone_seconds
    names = {"alone": "runs queued alone", "sweep": "one grid sweep"}
    table = [
        f"| {i + 1} | {names[side]} | {n} | {t:.1f} s | {t / n:.1f} s |"
        for i, (side, n, t) in enumerate(rows)
    ]
    text = "\n".join([
        "# Sweep overhead",
        "",
        f"`python bench/sweeps.py --rows {args.rows} --ranks {args.ranks} --pairs {args.pairs}` "
        "(protocol: the script's docstring). Makespan, one worker, fresh data folder, every "
        "round in one run, in the order shown (A-B-B-A, so that drift falls on both sides).",
        "",
        "| round | side | runs | makespan | per run |",
        "|---:|---|---:|---:|---:|",
        *table,
        "",
        f"Sweep / alone (sum of each side's makespans): **{ratio:.3f}x** "
        f"(target ≤ 1.05x: {'met' if ratio <= 1.05 else 'MISSED'}). Statuses: {', '.join(sorted(statuses))}.",
        "",
    ])  # fmt: skip
    REPORT.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
