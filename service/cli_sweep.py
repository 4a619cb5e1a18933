"""``python app.py sweep``: a grid, an Optuna search or one run per method, as one group.

    python app.py sweep --data F [--eval-data F] --method lora --grid rank=2,8,32 [--grid lr=...]
    python app.py sweep --data F --methods lora,adapter,ia3
    python app.py sweep --data F --method lora --trials 8 [--search rank,lr] [--pruner median]

Every training flag of ``train`` sets what the trials share. With ``--wait`` it runs the
trials (starting a supervisor for this sweep when none is running), prints one line per
finished trial on stderr and ends with one JSON line: ``{"sweep_id", "best_job_id",
"trials": [{"job_id", "method", "params", "status", "accuracy", "macro_f1",
"trainable_params", "train_seconds", "adapter_bytes", "pareto"}]}``. Exit codes as for
``train``: 0 when at least one trial succeeded, 2 for bad input, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from backend.errors import ConfigError
from backend.settings import Settings
from service.cli_args import add_train_arguments, method_config_from_args, train_config_from_args
from service.cli_jobs import WAIT_POLL_SECONDS, _bench, _print_json

TRIAL_FIELDS = (
    "job_id", "method", "params", "status", "accuracy", "macro_f1",
    "trainable_params", "train_seconds", "adapter_bytes", "pareto",
)  # fmt: skip


def add_sweep_command(sub: Any, common: argparse.ArgumentParser) -> None:
    sweep = sub.add_parser(
        "sweep", parents=[common], help="queue a sweep: a grid, a search or several methods"
    )
    add_train_arguments(sweep, method_required=False)
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a grid axis (one or two): a setting of the method or a run setting such as lr",
    )
    sweep.add_argument("--methods", help="comma-separated methods: one trial each (automatic learning rate)")
    sweep.add_argument("--trials", type=int, default=0, help="an Optuna TPE search of this many trials")
    sweep.add_argument(
        "--search",
        default="",
        help="comma-separated settings to search (default: the method's main one and lr)",
    )
    sweep.add_argument("--pruner", default="median", choices=("median", "halving", "none"))
    sweep.add_argument("--objective", default="accuracy", choices=("accuracy", "macro_f1"))
    sweep.add_argument("--name", help="sweep name (default: method, axes and dataset)")
    sweep.add_argument("--wait", action="store_true", help="run the trials and print the result line")


def cmd_sweep(args: argparse.Namespace, settings: Settings) -> int:
    methods = [m.strip() for m in (args.methods or "").split(",") if m.strip()]
    if args.method is None:
        if not methods:
            raise ConfigError("give --method (for a grid or a search) or --methods (one trial per method)")
        args.method = methods[0]
    bench = _bench(settings)
    settings_by_method = {m: method_config_from_args(args, m) for m in methods} if methods else None
    sweep_id = bench.submit_sweep(
        train_config_from_args(args),
        grid=args.grid,
        methods=methods,
        method_settings=settings_by_method,
        trials=args.trials,
        search=[s for s in args.search.split(",") if s.strip()],
        pruner=args.pruner,
        objective=args.objective,
        name=args.name,
        seed=args.seed,
    )
    if not args.wait:
        _print_json({"sweep_id": sweep_id, "status": "running"})
        return 0
    detail = wait_for_sweep(bench, settings, sweep_id)
    trials = [{k: t[k] for k in TRIAL_FIELDS} for t in detail["trials"]]
    _print_json({"sweep_id": sweep_id, "best_job_id": detail["best_job_id"], "trials": trials})
    return 0 if any(t["status"] == "succeeded" for t in trials) else 1


def wait_for_sweep(bench: Any, settings: Settings, sweep_id: int) -> dict[str, Any]:
    """Run (or watch) the sweep until it ends; a line on stderr per trial that ends."""
    from jobs.supervisor import Supervisor  # deferred: SQLAlchemy loads only for job commands

    supervisor = None
    detail = bench.get_sweep(sweep_id)
    if not bench.supervisor_running():
        print("no supervisor is running: running this sweep in this process", file=sys.stderr)
        trial_ids = {t["job_id"] for t in detail["trials"]}
        supervisor = Supervisor(settings, only_jobs=trial_ids, only_sweeps={sweep_id}).start()
    reported: set[int] = set()
    try:
        while True:
            detail = bench.get_sweep(sweep_id)
            for t in detail["trials"]:
                if t["status"] not in ("queued", "running") and t["job_id"] not in reported:
                    reported.add(t["job_id"])
                    score = "-" if t["score"] is None else f"{t['score']:.4f}"  # the task's primary metric
                    print(
                        f"trial #{t['job_id']} {t['params']}: {t['status']} {t['primary_metric']} {score}",
                        file=sys.stderr,
                    )
            if detail["status"] != "running":
                return detail
            time.sleep(WAIT_POLL_SECONDS)
    except KeyboardInterrupt:
        print(f"error: stopped waiting; sweep {sweep_id} keeps running", file=sys.stderr)
        raise
    finally:
        if supervisor is not None:
            supervisor.stop()
