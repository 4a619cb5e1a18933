"""Benchmark: does a larger base model lift the tasks the default encoder barely learns?

    .venv/bin/python bench/larger_base.py [--datasets rte] [--only probe,lora] [--epochs 5]

bench/TASKS.md leaves RTE's sentence pairs near the majority class for every method on the
22M-parameter default encoder (full fine-tuning 0.561 ± 0.017 against 0.527), and the
"did not learn" flag then advises a larger base. Here each method runs on the default encoder
and on SmolLM2-135M-Instruct (the offline decoder) with the same rows, seed and settings:
bench/tasks.py's 1,000-row sample and evaluation split, learning rate "auto", early stopping,
but a fixed number of epochs, because SmolLM2's epochs take minutes on this CPU where the
encoder's take seconds. Rows go to bench/larger_base_runs.jsonl as they finish (a rerun skips
those there) and bench/LARGER_BASE.md is rewritten after each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tasks import COMMIT, DATASETS, ROOT, SHARED, run_one, train_subset

RUNS = ROOT / "bench" / "larger_base_runs.jsonl"
REPORT = ROOT / "bench" / "LARGER_BASE.md"
MODELS = {"encoder": None, "smollm2": "SmolLM2-135M-Instruct"}  # None: the app's default model
ROWS, SEED = 1000, 0


def done() -> dict[tuple[str, str, str, int], dict[str, Any]]:
    text = RUNS.read_text() if RUNS.exists() else ""
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    return {(r["dataset"], r["method"], r["model"], r["epochs"]): r for r in rows}


def _cell(row: dict[str, Any] | None, key: str, fmt: str, flag: bool = False) -> str:
    if row is None:
        return "–"
    return fmt.format(row[key]) + (" ⚠" if flag and row["flag"] else "")


def render(runs: dict[tuple[str, str, str, int], dict[str, Any]]) -> str:
    lines = [
        "# A larger base model on the tasks the default encoder barely learns",
        "",
        f"`python bench/larger_base.py` on a 2-core CPU: {ROWS} training rows (bench/tasks.py's seeded "
        "sample), the dataset's own evaluation split, seed 0, learning rate auto, early stopping "
        "(patience 3), a fixed number of epochs (SmolLM2's take minutes here). *encoder*: the "
        "default all-MiniLM-L6-v2 (22M); *SmolLM2*: SmolLM2-135M-Instruct (134.5M), the offline decoder. "
        "⚠ = at or below the majority class (the run's 'did not learn' flag).",
        "",
        "| dataset | method | epochs | encoder | SmolLM2 | majority | lr (encoder / SmolLM2) "
        "| run seconds (encoder / SmolLM2) | code |",
        "|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for d, m, e in sorted({(d, m, e) for d, m, _, e in runs}):
        pair = [runs.get((d, m, model, e)) for model in MODELS]
        score = [_cell(r, DATASETS[d][1], "{:.3f}", flag=True) for r in pair]
        lr = [_cell(r, "lr", "{:g}") for r in pair]
        seconds = [_cell(r, "wall_seconds", "{:.0f}") for r in pair]
        majority = next(r["majority"] for r in pair if r)
        lines.append(
            f"| {d} | {m} | {e} | {score[0]} | {score[1]} | {majority:.3f} | {' / '.join(lr)} "
            f"| {' / '.join(seconds)} | {', '.join(sorted({r['commit'] for r in pair if r}))} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="rte")
    p.add_argument("--only", default="probe,lora", help="comma-separated method keys")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--report", action="store_true", help="only rewrite bench/LARGER_BASE.md")
    args = p.parse_args()
    if not args.report and not SHARED.exists():
        print(f"skipped: {SHARED} is absent")
        return 0
    runs = done()
    todo = [
        (d, m, model)
        for model in MODELS  # the encoder's rows first: seconds, where SmolLM2's take many minutes
        for d in args.datasets.split(",")
        for m in args.only.split(",")
        if (d, m, model, args.epochs) not in runs and not args.report
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for d, m, model in todo:
            extra: dict[str, Any] = {"epochs": args.epochs}
            if MODELS[model]:
                extra["model"] = MODELS[model]
            train = train_subset(d, ROWS, Path(tmp))
            row = run_one(d, m, "auto", SEED, train, Path(tmp) / f"{d}-{m}-{model}", extra)
            row = {**row, "model": model, "epochs": args.epochs}
            with RUNS.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            runs[(d, m, model, args.epochs)] = row
            figure = row[DATASETS[d][1]]
            print(f"{d} {m} {model}: {figure:.3f} in {row['wall_seconds']:.0f} s ({COMMIT})", flush=True)
            REPORT.write_text(render(runs))
    REPORT.write_text(render(runs))
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
