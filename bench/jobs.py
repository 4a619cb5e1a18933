"""What the job queue costs: the same training run directly and through the queue.

    python bench/jobs.py [--data ../shared/data/sst2/train.csv] [--rows 2000] [--epochs 1]

Runs one configuration (LoRA on the default model, about a minute on a 2-core CPU)
both as ``python app.py train`` (a fresh process, like the worker) and through
submit -> supervisor -> worker -> database, alternating, both at the worker's
niceness. Reports the ratio of wall times (target: the job path at most 5% slower),
split into time inside and outside training so that a machine busy with other work
does not hide the queue's own cost, and the metric rows written per second; then
measures the reporter's cost per step without training. Prints the figures and
writes ``bench/JOBS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.settings import Settings, apply_environment  # noqa: E402
from backend.training.callbacks import StepInfo  # noqa: E402
from jobs.reporting import JobLog, JobReporter  # noqa: E402
from jobs.runner import WORKER_NICENESS  # noqa: E402
from jobs.schema import FINISHED, RUNNING, Job  # noqa: E402
from jobs.supervisor import Supervisor  # noqa: E402
from service.api import Workbench  # noqa: E402 - needs the path above

SST2 = ROOT.parent / "shared" / "data" / "sst2" / "train.csv"


def sample_data(source: Path | None, rows: int, folder: Path) -> tuple[Path, str]:
    """A ``rows``-row CSV: a seeded shuffle of ``source``, or generated reviews."""
    if source is not None and source.is_file():
        frame = pd.read_csv(source).sample(frac=1, random_state=0).head(rows)
        origin = f"`{source.name}` from {source.parent}, first {len(frame)} rows of a seeded shuffle"
    else:
        rng = random.Random(0)
        words = {"pos": ("good", "fine", "great", "fun"), "neg": ("bad", "dull", "poor", "weak")}
        labels = [("pos", "neg")[i % 2] for i in range(rows)]
        frame = pd.DataFrame(
            {"text": [" ".join(rng.choices(words[y], k=12)) for y in labels], "label": labels}
        )
        origin = f"{rows} generated two-class texts"
    path = folder / "bench.csv"
    frame.to_csv(path, index=False)
    return path, origin


def train_args(data: Path, epochs: int) -> list[str]:
    return [
        "--data",
        str(data),
        "--method",
        "lora",
        "--epochs",
        str(epochs),
        "--batch-size",
        "32",
        "--max-length",
        "128",
    ]


def warm_up() -> None:
    """Import what ``submit`` needs once, as the app does at start-up, so the first timed
    job does not pay for importing transformers in this process."""
    from backend.catalogue import DEFAULT_MODEL, model_info
    from backend.training.config import load_data  # noqa: F401 - the import is the point

    model_info(DEFAULT_MODEL)


def child_cpu() -> float:
    """CPU seconds used so far by this process's reaped children (the training processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_direct(data: Path, epochs: int, out: Path) -> dict[str, Any]:
    """``python app.py train`` in a fresh process at the worker's niceness; wall time."""
    started, cpu = time.perf_counter(), child_cpu()
    proc = subprocess.Popen(
        [sys.executable, "app.py", "train", *train_args(data, epochs), "--out", str(out)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    psutil.Process(proc.pid).nice(WORKER_NICENESS)
    stdout, _ = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"direct run failed with exit code {proc.returncode}")
    summary = json.loads(stdout.strip().splitlines()[-1])
    return {
        "wall": wall,
        "train_seconds": summary["train_seconds"],
        "cpu": child_cpu() - cpu,
        "accuracy": summary["accuracy"],
    }


def run_job(data: Path, epochs: int, settings: Settings) -> dict[str, Any]:
    """submit -> supervisor (in this process) -> worker -> database; wall time to the end."""
    from service.cli import build_parser, train_config_from_args

    bench = Workbench(settings)
    cfg = train_config_from_args(
        build_parser().parse_args(["train", *train_args(data, epochs), "--out", "unused"])
    )
    supervisor = Supervisor(settings, max_concurrent=1).start()
    try:
        started, cpu = time.perf_counter(), child_cpu()
        job_id = bench.submit(cfg)
        while (job := bench.get_job(job_id, log_tail=0))["status"] not in FINISHED:
            time.sleep(0.25)  # about what a browser polling the UI costs
        wall = time.perf_counter() - started
        while supervisor.handles:  # reaped, so its CPU time is counted
            time.sleep(0.05)
        cpu = child_cpu() - cpu
    finally:
        supervisor.stop()
    if job["status"] != "succeeded":
        raise SystemExit(f"job failed: {job['error']}")
    with bench.db.read() as session:
        from sqlalchemy import func, select

        from jobs.schema import Metric

        rows = session.scalar(select(func.count()).where(Metric.job_id == job_id)) or 0
    return {
        "wall": wall,
        "train_seconds": job["train_seconds"],
        "cpu": cpu,
        "accuracy": job["accuracy"],
        "metric_rows": rows,
        "steps": job["total_steps"],
    }


def reporter_cost(settings: Settings, steps: int = 20000) -> dict[str, float]:
    """The callback alone: ``steps`` on_step calls (flushing about once a second)."""
    bench = Workbench(settings)
    with bench.db.write() as session:
        job = Job(name="reporter", status=RUNNING, method="lora", model="m", quant="none", config={})
        session.add(job)
        session.flush()
        job_id = job.id
    reporter = JobReporter(bench.db, job_id, JobLog(settings.data_dir / "reporter.log"))
    started = time.perf_counter()
    for step in range(1, steps + 1):
        reporter.on_step(StepInfo(step, steps, 1, 0.5, 1e-3, 100.0, time.perf_counter() - started))
    reporter.flush()
    elapsed = time.perf_counter() - started
    return {
        "steps": steps,
        "us_per_step": 1e6 * elapsed / steps,
        "rows_per_second": reporter.rows_written / elapsed,
    }


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def row(label: str, run: dict[str, Any]) -> str:
    """One table row of the report."""
    outside = run["wall"] - run["train_seconds"]
    return (
        f"| {label} | {run['wall']:.1f} | {run['train_seconds']:.1f} | {outside:.1f} "
        f"| {run['cpu']:.1f} | {run['accuracy']:.4f} |"
    )


def report(
    args: argparse.Namespace,
    origin: str,
    direct: dict[str, Any],
    job: dict[str, Any],
    cost: dict[str, float],
    loads: list[str],
) -> str:
    ratio, cpu_ratio = job["wall"] / direct["wall"], job["cpu"] / direct["cpu"]
    # The queue's own cost is what happens outside training (submit, poll, spawn, DB
    # writes at the end) plus the reporter inside it; training speed itself varies with
    # whatever else the machine runs, so compare at the direct run's training time.
    outside = (job["wall"] - job["train_seconds"]) - (direct["wall"] - direct["train_seconds"])
    in_loop = cost["us_per_step"] * 1e-6 * job["steps"]
    equal_speed = (direct["wall"] + outside + in_loop) / direct["wall"]
    verdict = "meets" if equal_speed <= 1.05 else "misses"
    rows_per_s = job["metric_rows"] / job["train_seconds"]
    return f"""# Job queue overhead

`python bench/jobs.py --rows {args.rows} --epochs {args.epochs} --repeats {args.repeats}` on
{os.cpu_count()} CPU cores (the fastest of {args.repeats} runs each, alternating). Data: {origin}.
LoRA r=8 on all-MiniLM-L6-v2, batch 32, max length 128, {args.epochs} epoch(s),
{int(job["steps"])} optimizer steps; both paths at niceness {WORKER_NICENESS} (the worker's).

| path | wall s | training core s | outside training s | CPU s of the process | accuracy |
|---|---:|---:|---:|---:|---:|
{row("direct: `python app.py train` (fresh process)", direct)}
{row("job: submit -> supervisor -> worker -> database", job)}

- Measured wall-time ratio job / direct: {ratio:.3f}; CPU-time ratio of the training
  process (worker / direct, unaffected by waiting for the CPU): {cpu_ratio:.3f}.
- The queue's own cost: {outside:+.1f} s outside training (submit, supervisor poll, worker
  start, final database writes) and {in_loop:.3f} s inside it (the reporter, below); at equal
  training speed the job path takes **{equal_speed:.3f}x** the direct time ({verdict} the
  target of at most 1.05).
- Metric rows written: {int(job["metric_rows"])}, {rows_per_s:.2f} rows per second of
  training (3 per step plus 4 per epoch, one transaction about once a second).
- The reporter alone, without training: {cost["us_per_step"]:.1f} µs per step over
  {cost["steps"]:,} steps, i.e. {cost["rows_per_second"]:,.0f} metric rows/s into SQLite.
- Load average (1/5/15 min) at the start and after each run: {" | ".join(loads)}. The training-core
  times differ only by what else the machine was running (the same code trains in both).
"""


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest run: the least disturbed by other processes on the machine."""
    return min(runs, key=lambda r: r["wall"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SST2 if SST2.is_file() else None)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "JOBS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        root = Path(tmp)
        settings = Settings.from_env().with_(
            data_dir=root / "data", db_url=f"sqlite:///{root / 'data' / 'jobs.db'}"
        )
        apply_environment(settings)
        data, origin = sample_data(args.data, args.rows, root)
        warm_up()
        loads, directs, jobs = [load()], [], []
        for i in range(args.repeats):
            # Alternate which path goes first, so a load that rises or falls hits both.
            for path in ("direct", "job") if i % 2 == 0 else ("job", "direct"):
                if path == "direct":
                    directs.append(run_direct(data, args.epochs, root / f"direct-{i}"))
                else:
                    jobs.append(run_job(data, args.epochs, settings))
                loads.append(load())
            print(f"run {i + 1}: direct {directs[-1]['wall']:.1f} s, job {jobs[-1]['wall']:.1f} s")
        cost = reporter_cost(settings.with_(db_url=f"sqlite:///{root / 'reporter.db'}"))
    text = report(args, origin, best(directs), best(jobs), cost, loads)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
