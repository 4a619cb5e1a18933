"""Benchmark: the forecast before launch against what the runs then took and used.

    .venv/bin/python bench/forecast.py [--rows 2000] [--epochs 2] [--only lora,full]

SST-2: a seeded sample of ``--rows`` training rows, all 872 dev rows, batch 32, max length
128, learning rate auto, ``--epochs`` epochs, no early stopping, through the real job queue
(one worker, one run at a time) on a fresh data folder. Before each run the Train tab's
forecast is taken (``Workbench.forecast``) with whatever this machine has finished so far:
the first method gets the first guess, later ones the utilisation of the earlier methods'
runs. After all runs, every method is forecast again with its own run in the history
(the calibrated case, what a person sees from their second run of a method on). Time is
compared with the run's ``train_seconds`` (building the model, the learning-rate search, the
epochs and their evaluations; the worker's start is in neither); memory with the worker's
peak resident memory.
Writes bench/FORECAST.md.
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
REPORT = ROOT / "bench" / "FORECAST.md"
METHODS = ["probe", "full", "lora", "prompt", "prefix", "ptuning", "adapter", "ia3"]


def actual(job: dict[str, Any]) -> tuple[float, float]:
    """(seconds the forecast covers, peak MB) of a finished job."""
    s = job["metrics"]  # train_seconds: model build, search, epochs and their evaluations
    return s["train_seconds"], s["peak_rss_mb"]


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    import pandas as pd

    from jobs.supervisor import Supervisor
    from service.api import Workbench
    from tests.jobs.conftest import make_settings, wait_status

    tmp = Path(tempfile.mkdtemp(prefix="bench-forecast-"))
    train = tmp / "sst2-train.csv"
    pd.read_csv(SST2 / "train.csv").sample(n=args.rows, random_state=0).to_csv(train, index=False)
    bench = Workbench(make_settings(tmp))
    data, dev = bench.register_dataset(train), bench.register_dataset(SST2 / "dev.csv")
    common = {"epochs": args.epochs, "lr": "auto", "batch_size": 32, "max_length": 128,
              "early_stopping_patience": 0}  # fmt: skip
    methods = args.only.split(",") if args.only else METHODS
    rows = []
    supervisor = Supervisor(bench.settings, max_concurrent=1, poll_seconds=0.5).start()
    try:
        for method in methods:
            before = bench.forecast(data["id"], method, {}, eval_dataset_id=dev["id"], **common)
            config = {"data": str(train), "eval_data": str(SST2 / "dev.csv"), "method": method, **common}
            job_id = bench.submit(config)
            started = time.perf_counter()
            job = wait_status(bench, job_id, timeout=3600)
            print(f"{method}: {job['status']} in {time.perf_counter() - started:.0f} s", flush=True)
            rows.append({"method": method, "before": before, "job": bench.get_job(job_id, log_tail=0)})
    finally:
        supervisor.stop(kill_workers=True)
    for row in rows:
        row["after"] = bench.forecast(data["id"], row["method"], {}, eval_dataset_id=dev["id"], **common)
    return rows


def error(forecast: float, real: float) -> str:
    return f"{100 * (forecast - real) / real:+.0f}%"


def render(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# Forecast before launch against the real runs",
        "",
        f"`python bench/forecast.py --rows {args.rows} --epochs {args.epochs}` (see the script's docstring "
        "for the protocol). *first* = the forecast before the method's run (history: the methods above "
        "it); *calibrated* = after, with its own run in the history. Time: the run's train_seconds. "
        "Target: time within ±25%, peak memory within ±15%.",
        "",
        "| method | actual time | first | error | calibrated | error | actual peak MB | forecast | error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row["job"]["status"] != "succeeded":
            lines.append(f"| {row['method']} | {row['job']['status']} | | | | | | | |")
            continue
        seconds, peak = actual(row["job"])
        first, after = row["before"]["total_seconds"], row["after"]["total_seconds"]
        lines.append(
            f"| {row['method']} | {seconds:.0f} s | {first:.0f} s | {error(first, seconds)} | "
            f"{after:.0f} s | {error(after, seconds)} | {peak:.0f} | {row['after']['peak_mb']:.0f} | "
            f"{error(row['after']['peak_mb'], peak)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--only", help="comma-separated method keys")
    args = p.parse_args()
    if not SST2.is_dir():
        print(f"no shared data at {SST2}", file=sys.stderr)
        return 2
    REPORT.write_text(render(run(args), args))
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
