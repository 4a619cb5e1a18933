"""Benchmark (issue 45): did the new stack move the figures? The rows of bench/TASKS.md,
bench/TOKENS.md and bench/SCORES.md for full fine-tuning, LoRA, the bottleneck adapter and
prefix tuning, run again on the same seeds and data, beside the figure each had on the old stack
(transformers 4.57 with AdapterHub) and that figure's 95% interval over the evaluation rows.

    python bench/stack.py [--seeds 0] [--only lora,adapter] [--sets sst2,wnut17] [--report]
    python bench/stack.py --speed BEFORE_TREE:BEFORE_PYTHON [--epochs 2]


Each run goes through the benchmark that made the old row (bench/tasks.py, tokens.py,
scores.py: same rows, split, metric and defaults), is appended to bench/stack_runs.jsonl with
the library versions it ran on (a rerun skips the cells there), and bench/STACK.md is rewritten
after every run. A new figure "holds" when it lies inside the old figure's interval.

``--speed``: bench/SPEED.md's seconds per epoch (its protocol: SST-2, 2,000 rows, each method's
fixed learning rate, every epoch trained, the defaults), every method once on the old stack (a
checkout of the last commit with AdapterHub, run by the Python that has transformers 4.57) and
once on this one, one after the other per method, on this machine: bench/stack_speed_runs.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import scores, tasks, tokens  # noqa: E402
from bench.runs_file import append_run, read_runs  # noqa: E402

RUNS = ROOT / "bench" / "stack_runs.jsonl"
SPEED_RUNS = ROOT / "bench" / "stack_speed_runs.jsonl"
SPEED_METHODS = ("probe", "full", "lora", "prompt", "prefix", "ptuning", "adapter", "ia3")
REPORT = ROOT / "bench" / "STACK.md"
METHODS = ("full", "lora", "adapter", "prefix")
# set -> (the benchmark's runs file, the metric the row is judged on, the key of its interval)
SETS: dict[str, tuple[Path, str, str]] = {
    **{d: (tasks.RUNS, metric, "macro_f1_ci" if metric == "macro_f1" else "score_ci")
       for d, (_, metric) in tasks.DATASETS.items()},
    "wnut17": (tokens.RUNS, "entity_f1", "score_ci"),
    "stsb": (scores.RUNS, "spearman", "score_ci"),
}  # fmt: skip


def old_row(dataset: str, method: str, seed: int) -> dict[str, Any] | None:
    """The newest row of the cell on the old stack (every row of these files predates it)."""
    runs, _, _ = SETS[dataset]
    rows = [
        r
        for r in read_runs(runs)
        if r.get("method") == method
        and r.get("seed") == seed
        and r.get("config", "auto") == "auto"
        and r.get("dataset", dataset if runs != tasks.RUNS else None) == dataset
        and r.get("rows", 1000) == 1000
    ]
    return rows[-1] if rows else None


def run_one(dataset: str, method: str, seed: int, folder: Path) -> dict[str, Any]:
    if dataset in tasks.DATASETS:
        train = tasks.train_subset(dataset, 1000, folder)
        row = tasks.run_one(dataset, method, "auto", seed, train, folder / f"{dataset}-{method}-{seed}")
    elif dataset == "wnut17":
        row = tokens.run_one(method, seed, 1000, folder)
    else:
        row = scores.run_one(method, seed, 1000, folder)
    libs = {name: version(name) for name in ("transformers", "peft", "torch")}
    return {**row, "dataset": dataset, "versions": libs}


def verdict(value: float, ci: list[float] | None, flip: bool = False) -> str:
    """Where ``value`` lies in ``ci``, said of the new figure (``flip``: the value is the old
    figure and the interval the new run's, so an old figure above it means the new one is below)."""
    if not ci:
        return "no interval"
    if ci[0] <= value <= ci[1]:
        return "holds"
    return "**below**" if (value < ci[0]) != flip else "above"


def render() -> str:
    lines = [
        "# The new stack against the old: the figures kept (issue 45)",
        "",
        "`python bench/stack.py` (bench/stack.py's docstring says how). *old*: the newest row of the "
        "cell in bench/tasks_runs.jsonl, tokens_runs.jsonl or scores_runs.jsonl (transformers 4.57.6, "
        "AdapterHub's adapters 1.3 for the bottleneck adapter), with its 95% interval over the "
        "evaluation rows; *new*: the same run on transformers 5.23 with this project's own adapter "
        "module. Same 1,000 training rows, split, metric, seed and defaults (learning rate and "
        "epochs auto). *holds*: the new figure lies inside the old interval. † the old row kept no "
        "interval (it predates issue 37): the new run's interval over the same evaluation rows "
        "is shown, and the verdict says where the old figure lies in it. Times are in the speed "
        "section below (these runs shared the machine with test runs, paused meanwhile).",
        "",
        "| set | metric | method | seed | old [95% CI] | new | verdict | lr old → new | epochs run old → new | code old → new |",  # noqa: E501
        "|---|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for new in read_runs(RUNS):
        dataset, method, seed = new["dataset"], new["method"], new["seed"]
        _, metric, ci_key = SETS[dataset]
        old = old_row(dataset, method, seed) or {}
        if old.get(ci_key):
            ci, mark, judged = old[ci_key], "", verdict(new[metric], old[ci_key])
        else:  # rows from before issue 37 kept no interval: the new run's, over the same rows
            ci, mark, judged = new.get(ci_key), "†", verdict(old[metric], new.get(ci_key), flip=True)
        interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]{mark}" if ci else ""
        lines.append(
            f"| {dataset} | {metric} | {method} | {seed} | {old[metric]:.3f}{interval} | "
            f"{new[metric]:.3f} | {judged} | {old.get('lr')} → {new.get('lr')} | "
            f"{old.get('epochs_run')} → {new.get('epochs_run')} | "
            f"{old.get('commit')} → {new.get('commit')} |"
        )
    return "\n".join([*lines, *speed_table()]) + "\n"


def timed(tree: Path, python: str, method: str, train: Path, epochs: int, out: Path) -> dict[str, Any]:
    """One ``app.py train`` of bench/speed.py's "new" setting, in ``tree`` with ``python``."""
    dev = tasks.SHARED / "sst2" / "dev.csv"
    cmd = [python, "app.py", "train", "--data", str(train), "--eval-data", str(dev), "--method", method,
           "--out", str(out), "--lr", "default", "--patience", "0", "--seed", "0"]  # fmt: skip
    if method != "probe":
        cmd += ["--epochs", str(epochs)]
    # a data folder per run: the probe computes its features rather than reading a cached set
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(out.parent / f"data-{out.name}")}
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{method} failed in {tree}:\n{proc.stderr[-3000:]}")
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    version_of = [python, "-c", "import transformers; print(transformers.__version__)"]
    return {
        "method": method,
        "transformers": subprocess.run(version_of, capture_output=True, text=True).stdout.strip(),
        **{k: summary.get(k) for k in ("seconds_per_epoch", "train_seconds", "accuracy", "precision")},
    }


def speed(before: str, epochs: int, only: list[str]) -> None:
    tree, python = before.split(":", 1)
    folder = Path(tempfile.mkdtemp(prefix="bench-stack-speed-"))
    train = folder / "sst2-train-2000.csv"
    import pandas as pd

    pd.read_csv(tasks.SHARED / "sst2" / "train.csv").sample(frac=1, random_state=0).head(2000).to_csv(
        train, index=False
    )
    done = {(r["method"], r["stack"]) for r in read_runs(SPEED_RUNS)}
    for method in only:
        for stack, where, py in (("old", Path(tree), python), ("new", ROOT, sys.executable)):
            if (method, stack) in done:
                continue
            print(f"speed {method} {stack} ...", flush=True)
            row = {**timed(where, py, method, train, epochs, folder / f"{method}-{stack}"), "stack": stack,
                   "epochs": epochs, "cpu": platform.processor() or platform.machine()}  # fmt: skip
            append_run(SPEED_RUNS, row)


def speed_table() -> list[str]:
    runs = {(r["method"], r["stack"]): r for r in read_runs(SPEED_RUNS)}
    if not runs:
        return ["", "## Seconds per epoch, before and after", "", "Not run yet (`--speed`)."]
    lines = [
        "",
        "## Seconds per epoch, before and after",
        "",
        "`python bench/stack.py --speed /tmp/before:.venv-old/bin/python --epochs 2`: bench/SPEED.md's "
        "*new* setting (SST-2, 2,000 rows, batch 32, max length 128, each method's fixed learning "
        "rate, 2 epochs, no early stop), each method on the old stack (commit c47305d, the last "
        "with AdapterHub, on transformers 4.57.6) then on this one, one after the other on this "
        "machine (2 cores, AVX2 only: precision auto is fp32 here). The probe's figure is its whole "
        "training time (its cost is the encoder pass over the rows).",
        "",
        "| method | old s/epoch | new s/epoch | new / old | old accuracy | new accuracy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for method in SPEED_METHODS:
        old, new = runs.get((method, "old")), runs.get((method, "new"))
        if not (old and new):
            continue
        key = "train_seconds" if method == "probe" else "seconds_per_epoch"
        lines.append(
            f"| {method} | {old[key]:.2f} | {new[key]:.2f} | {new[key] / old[key]:.2f} | "
            f"{old['accuracy']:.3f} | {new['accuracy']:.3f} |"
        )
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0")
    p.add_argument("--only", help="comma-separated method keys (default: full, lora, adapter, prefix)")
    p.add_argument("--sets", help=f"comma-separated, of {', '.join(SETS)} (default: all)")
    p.add_argument("--report", action="store_true", help="only rewrite bench/STACK.md")
    p.add_argument("--speed", metavar="TREE:PYTHON", help="time every method on the old stack and this one")
    p.add_argument("--epochs", type=int, default=2, help="epochs of each --speed run")
    args = p.parse_args()
    if args.speed:
        speed(args.speed, args.epochs, args.only.split(",") if args.only else list(SPEED_METHODS))
    elif not args.report:
        methods = args.only.split(",") if args.only else list(METHODS)
        sets = args.sets.split(",") if args.sets else list(SETS)
        done = {(r["dataset"], r["method"], r["seed"]) for r in read_runs(RUNS)}
        folder = Path(tempfile.mkdtemp(prefix="bench-stack-"))
        for seed in (int(s) for s in args.seeds.split(",")):
            for dataset in sets:
                for method in methods:
                    if (dataset, method, seed) in done or old_row(dataset, method, seed) is None:
                        continue
                    print(f"{dataset} {method} seed {seed} ...", flush=True)
                    append_run(RUNS, run_one(dataset, method, seed, folder))
                    REPORT.write_text(render())
    REPORT.write_text(render())
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
