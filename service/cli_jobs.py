"""Job commands of the CLI: submit, jobs, show, cancel, resume, delete, evaluate, worker; and
the registered datasets: datasets, delete-dataset.

They go through :class:`service.api.Workbench` like the UI does. Results are one JSON
line on stdout (``jobs``/``show`` print a readable view unless ``--json``); notes and
followed log lines go to stderr. Exit codes as in ``service.cli``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backend.settings import Settings
from service.cli_args import add_train_arguments, train_config_from_args
from service.formatting import metric_word

WAIT_POLL_SECONDS = 0.5


def add_job_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register the job subcommands on ``sub`` (``common`` carries --db-url)."""
    submit = sub.add_parser("submit", parents=[common], help="queue a training job (same flags as train)")
    add_train_arguments(submit)
    submit.add_argument("--name", help="job name (default: method, key setting and dataset)")
    submit.add_argument(
        "--wait", action="store_true", help="wait for the job and print train's final JSON line"
    )
    jobs = sub.add_parser("jobs", parents=[common], help="list jobs, newest first")
    jobs.add_argument("--json", action="store_true")
    show = sub.add_parser("show", parents=[common], help="one job in detail")
    show.add_argument("job", type=int)
    show.add_argument("--json", action="store_true")
    for name, text in (
        ("cancel", "cancel a queued or running job"),
        ("resume", "continue a failed/cancelled job from its checkpoint"),
        ("delete", "delete a job's rows and artifacts"),
    ):
        sub.add_parser(name, parents=[common], help=text).add_argument("job", type=int)
    datasets = sub.add_parser("datasets", parents=[common], help="list registered datasets, newest first")
    datasets.add_argument("--json", action="store_true")
    sub.add_parser(
        "delete-dataset",
        parents=[common],
        help="delete a dataset and its stored copy (not while a job uses it)",
    ).add_argument("dataset", type=int)
    evaluate = sub.add_parser(
        "evaluate", parents=[common], help="evaluate a succeeded job on another labelled file (same labels)"
    )
    evaluate.add_argument("job", type=int)
    evaluate.add_argument("--data", required=True, help="the labelled file (CSV, TSV, JSONL/JSON, Parquet)")
    for column in ("text", "text-pair", "label"):
        evaluate.add_argument(f"--{column}-column", help=f"the {column} column (default: found by name)")
    worker = sub.add_parser("worker", parents=[common], help="run the job supervisor in the foreground")
    worker.add_argument("--max-concurrent", type=int, help="jobs at once (default: 1 on CPU, one per GPU)")


def _bench(settings: Settings) -> Any:
    from service.api import Workbench  # deferred: SQLAlchemy loads only for job commands

    return Workbench(settings)


def _print_json(value: Any) -> None:
    print(json.dumps(value, default=str, ensure_ascii=False))


def cmd_submit(args: argparse.Namespace, settings: Settings) -> int:
    bench = _bench(settings)
    job_id = bench.submit(train_config_from_args(args), name=args.name)
    if not args.wait:
        _print_json({"id": job_id, "status": "queued"})
        return 0
    print(f"submitted job {job_id}", file=sys.stderr, flush=True)
    return wait_for(bench, settings, job_id)


def wait_for(bench: Any, settings: Settings, job_id: int) -> int:
    """Follow a job's log on stderr until it ends; exit code and stdout as ``train``."""
    # Deferred for start-up: SQLAlchemy loads only for job commands.
    from jobs.schema import FINISHED, SUCCEEDED
    from jobs.supervisor import Supervisor

    supervisor = None
    if not bench.supervisor_running():
        print("no supervisor is running: running this job in this process", file=sys.stderr)
        supervisor = Supervisor(settings, only_jobs={job_id}).start()
    offset = 0
    try:
        while True:
            job = bench.get_job(job_id, log_tail=0)
            offset = _follow(job.get("log_path"), offset)
            if job["status"] in FINISHED:
                break
            time.sleep(WAIT_POLL_SECONDS)
    except KeyboardInterrupt:
        print(
            f"error: stopped waiting; job {job_id} keeps running (python app.py cancel {job_id} stops it)",
            file=sys.stderr,
        )
        return 1
    finally:
        if supervisor is not None:
            supervisor.stop()
    _follow(job.get("log_path"), offset)
    if job["status"] == SUCCEEDED:
        _print_json(job["metrics"])
        return 0
    if job["status"] == "cancelled":
        print(f"error: job {job_id} was cancelled", file=sys.stderr)
        return 1
    print(f"error: {job['error']}", file=sys.stderr)
    return 2 if job.get("error_kind") == "user" else 1


def _follow(path: str | None, offset: int) -> int:
    """Print what was appended to ``path`` since ``offset``; returns the new offset."""
    if not path or not Path(path).is_file():
        return offset
    with Path(path).open("rb") as f:
        f.seek(offset)
        chunk = f.read()
    if chunk:
        sys.stderr.write(chunk.decode("utf-8", errors="replace"))
        sys.stderr.flush()
    return offset + len(chunk)


def _percent(job: dict[str, Any]) -> str:
    return f"{100 * (job['progress'] or 0):.0f}%"


def _metric(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    jobs = _bench(settings).list_jobs()
    if args.json:
        _print_json(jobs)
        return 0
    # SCORE: each run's task's primary metric (accuracy for labels, Spearman for scores, ...)
    print(f"{'ID':>4}  {'STATUS':<9}  {'DONE':>4}  {'SCORE':>6}  {'CREATED':<19}  NAME")
    for j in jobs:
        print(
            f"{j['id']:>4}  {j['status']:<9}  {_percent(j):>4}  {_metric(j['score']):>6}  "
            f"{(j['created'] or '')[:19]:<19}  {j['name']}"
        )
    if not jobs:
        print("no jobs yet: python app.py submit --data FILE --method lora", file=sys.stderr)
    return 0


def show_lines(job: dict[str, Any]) -> list[str]:
    state = job["status"]
    if state == "running":
        state += (
            f" ({_percent(job)}, epoch {job['epoch'] or 0}/{job['total_epochs'] or '?'}, "
            f"step {job['step'] or 0}/{job['total_steps'] or '?'}, "
            f"ETA {job['eta_seconds'] or '?'} s)"
        )
    lines = [
        f"job {job['id']}: {job['name']}",
        f"status: {state}",
        f"method: {job['method']} {job['knobs']}".rstrip(),
        f"model: {job['model']} (quantization {job['quant']})",
        f"dataset: {job['dataset']}",
        f"created: {job['created']}",
        f"started: {job['started']}",
        f"finished: {job['finished']}",
    ]
    if job["resumed_from"]:
        lines.append(f"resumed from: job {job['resumed_from']}")
    if job.get("rerun_of"):
        lines.append(f"settings from: job {job['rerun_of']}")
    metrics = job.get("metrics") or {}  # the task's headline metrics (accuracy, macro-F1; Spearman, ...)
    shown = [(k, metrics[k]) for k in job.get("headline") or () if isinstance(metrics.get(k), (int, float))]
    if shown:
        lines.append("  ".join(f"{metric_word(k)}: {v:.4f}" for k, v in shown))
    if job["error"]:
        lines.append(f"error: {job['error']}")
    lines.append(f"artifacts: {job['artifact_dir']}")
    points = sum(len(v) for v in job["series"].values())
    lines.append(f"metric points: {points}")
    return [*lines, "log (last lines):", *(f"  {line}" for line in job["log"])]


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    job = _bench(settings).get_job(args.job, log_tail=20)
    if args.json:
        _print_json(job)
    else:
        print("\n".join(show_lines(job)))
    return 0


def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    job = _bench(settings).cancel(args.job)
    if job["status"] == "running":
        print(f"job {args.job}: cancel requested; it stops within a few seconds", file=sys.stderr)
    _print_json({"id": args.job, "status": job["status"]})
    return 0


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    new_id = _bench(settings).resume(args.job)
    _print_json({"id": new_id, "resumed_from": args.job, "status": "queued"})
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    _bench(settings).delete(args.job)
    _print_json({"id": args.job, "deleted": True})
    return 0


def cmd_datasets(args: argparse.Namespace, settings: Settings) -> int:
    found = _bench(settings).list_datasets()
    if args.json:
        _print_json(found)
        return 0
    print(f"{'ID':>4}  {'ROWS':>8}  {'LABELS':>6}  {'CREATED':<19}  NAME")
    for d in found:
        print(
            f"{d['id']:>4}  {d['rows']:>8}  {len(d['label_counts']):>6}  {d['created'][:19]:<19}  {d['name']}"
        )
    if not found:
        print("no datasets yet: python app.py submit --data FILE ... registers one", file=sys.stderr)
    return 0


def cmd_delete_dataset(args: argparse.Namespace, settings: Settings) -> int:
    _print_json(_bench(settings).delete_dataset(args.dataset))
    return 0


def export_job(job_id: int, out: str | None, settings: Settings, include_samples: bool = False) -> int:
    """``export ID [--out FILE.zip] [--include-samples]``."""
    path = _bench(settings).export(job_id, out, include_samples=include_samples)
    _print_json({"zip": str(path), "bytes": path.stat().st_size})
    return 0


def cmd_evaluate(args: argparse.Namespace, settings: Settings) -> int:
    """``evaluate ID --data F``: the file is registered like an upload, then evaluated; prints
    the metrics without the per-class details (``show``-like JSON on one line)."""
    bench = _bench(settings)
    dataset = bench.register_dataset(
        args.data,
        text_column=args.text_column,
        text_pair_column=args.text_pair_column,
        label_column=args.label_column,
    )
    result = bench.evaluate(args.job, dataset["id"])
    keep = ("job_id", "dataset_id", "dataset", "rows", "accuracy", "macro_f1", "eval_loss", "warnings")
    _print_json({k: result[k] for k in keep})
    return 0


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    from jobs.supervisor import Supervisor  # deferred: SQLAlchemy loads only for job commands

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    supervisor = Supervisor(settings, max_concurrent=args.max_concurrent)
    try:
        supervisor.run_forever()
    except KeyboardInterrupt:
        print("supervisor stopped; running jobs continue and are adopted by the next one", file=sys.stderr)
    return 0


JOB_COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "submit": cmd_submit,
    "jobs": cmd_jobs,
    "show": cmd_show,
    "cancel": cmd_cancel,
    "resume": cmd_resume,
    "delete": cmd_delete,
    "datasets": cmd_datasets,
    "delete-dataset": cmd_delete_dataset,
    "evaluate": cmd_evaluate,
    "worker": cmd_worker,
}
