"""Benchmark: training speed of the old loop against the new defaults, on every method.

    .venv/bin/python bench/speed.py [--rows 2000] [--epochs 3] [--seeds 0,1,2] [--only lora,full]

Protocol of ../shared/BASELINE.md (SST-2, the same 2,000 training rows, all 872 dev rows,
batch 32, max length 128, each method's fixed learning rate, every epoch trained), one
process per run, everything in one invocation on one machine:

* **old**: random batches, fp32 and the plain kernels: torch's dropout, its per-tensor AdamW
  and transformers' default attention (the loop before length grouping, mixed precision,
  the CPU dropout from random bits with eager attention, and fused AdamW);
* **new**: the defaults: length-grouped batches, precision "auto", fused AdamW, and on the
  CPU the dropout of backend/training/fast_dropout.py, attention probabilities' included;
* **grouping alone** and **bf16 alone** (both with the plain kernels), to separate them (on a
  CPU without native bf16, "auto" is fp32, so *new* has no bf16; bf16 alone is then timed on
  a short run only, since it is emulated there and slower than fp32);
* **top 2 of 6 layers** (LoRA, Houlsby adapter) over cached lower layers: epoch 1 (which
  builds the cache) and later epochs apart, with accuracy, against an all-layers run (*new*
  again, "top2_all") run right before it;
* **prediction** rows/s of an exported run, length-sorted against plain batches.

Results go to bench/speed_runs.jsonl (a rerun skips the runs already there; delete it to
start over) and bench/SPEED.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.training.runtime import PLAIN_KERNELS_ENV  # noqa: E402
from bench.methods import METHODS, SST2, baseline_subset, train_cli  # noqa: E402
from bench.speed_report import SHORT_ROWS, render  # noqa: E402

RUNS = ROOT / "bench" / "speed_runs.jsonl"
OUT = ROOT / "bench" / "SPEED.md"
OLD = ["--no-group-by-length", "--precision", "fp32"]
SETTINGS: dict[str, list[str]] = {
    "old": OLD,
    "new": [],
    "grouped_fp32": ["--precision", "fp32"],
    "bf16_alone": ["--no-group-by-length", "--precision", "bf16"],
    "top2": ["--set", "top_layers=2"],
    # *new* again, right before "top2": the top-2 ratio then comes from one sitting
    "top2_all": [],
}
# The plain kernels (torch's dropout, per-tensor AdamW, default attention) for the old loop
# and for each half of *new* measured alone: the fast ones are the rest of *new*.
PLAIN_KERNELS = {"old", "grouped_fp32", "bf16_alone"}


def done_runs() -> dict[tuple[str, str, int, int], dict[str, Any]]:
    if not RUNS.is_file():
        return {}
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    return {(r["method"], r["setting"], r["seed"], r["rows"]): r for r in rows}


def run_one(
    method: str, setting: str, seed: int, rows: int, epochs: int, train: Path, tmp: Path
) -> dict[str, Any]:
    out = tmp / f"{method}-{setting}-{seed}-{rows}"
    extra = [*SETTINGS[setting], "--seed", str(seed), "--max-train-samples", str(rows)]
    started = time.perf_counter()
    env = {PLAIN_KERNELS_ENV: "1"} if setting in PLAIN_KERNELS else {}
    # A data folder per run: the probe must compute its features, not read an earlier run's.
    env["WORKBENCH_DATA_DIR"] = str(tmp / f"data-{out.name}")
    summary = train_cli(method, out, train, epochs, extra, env)
    keep = (
        "accuracy", "macro_f1", "seconds_per_epoch", "epoch_seconds", "train_seconds", "tokens_per_second",
        "padding_share", "mfu", "peak_tflops", "precision", "trainable_params", "peak_rss_mb",
        "feature_seconds",
    )  # fmt: skip
    record = {"method": method, "setting": setting, "seed": seed, "rows": rows, "epochs": epochs}
    record.update({k: summary.get(k) for k in keep})
    record["wall_seconds"] = round(time.perf_counter() - started, 1)
    if method == "lora" and setting in ("old", "new") and seed == 0 and rows > SHORT_ROWS:
        record["prediction"] = prediction_speed(out)
    return record


def prediction_speed(run_dir: Path) -> dict[str, float]:
    """Rows/s of the exported run on the dev set: the Predictor (length-sorted batches) vs
    plain batches in file order (what it did before)."""
    import pandas as pd
    import torch

    from backend.artifacts.load import Predictor

    texts = pd.read_csv(SST2 / "dev.csv")["text"].astype(str).tolist()
    pred = Predictor(run_dir)
    pred.predict_proba(texts[:64])  # warm-up
    t0 = time.perf_counter()
    pred.predict_proba(texts)
    sorted_rate = len(texts) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(texts), 64):
            enc = pred.tokenizer(
                texts[i : i + 64], truncation=True, max_length=128, padding=True, return_tensors="pt"
            )
            pred.model(**enc)
    plain_rate = len(texts) / (time.perf_counter() - t0)
    return {"sorted_rows_per_s": round(sorted_rate, 1), "plain_rows_per_s": round(plain_rate, 1)}


def plan(args: argparse.Namespace, native_bf16: bool) -> list[tuple[str, str, int, int]]:
    methods = args.only.split(",") if args.only else METHODS
    seeds = [int(s) for s in args.seeds.split(",")]
    todo = []
    for method in methods:
        for setting in ("old", "new"):
            for seed in seeds if method in args.all_seeds.split(",") else seeds[:1]:
                todo.append((method, setting, seed, args.rows))
        if method in ("lora", "adapter"):
            todo += [(method, "top2_all", seeds[0], args.rows), (method, "top2", seeds[0], args.rows)]
    if native_bf16:  # "new" is grouping + bf16: measure each alone at full length too
        todo += [(m, s, seeds[0], args.rows) for m in methods for s in ("grouped_fp32", "bf16_alone")]
    else:  # "new" is grouping alone; bf16 (emulated) only on a short run against fp32
        todo += [
            (m, s, seeds[0], SHORT_ROWS)
            for m in ("lora", "full")
            if m in methods
            for s in ("old", "bf16_alone")
        ]
    return todo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--only", default="")
    parser.add_argument("--all-seeds", default="lora,full", help="methods on every seed; others: the first")
    parser.add_argument("--render", action="store_true", help="only write SPEED.md from the runs so far")
    args = parser.parse_args()
    from backend.training.runtime import cpu_has_bf16

    native = cpu_has_bf16()
    have = done_runs()
    if args.render:
        OUT.write_text(render(list(have.values()), args, native))
        print(OUT.read_text())
        return
    with tempfile.TemporaryDirectory() as tmp:
        train = baseline_subset(args.rows, Path(tmp))
        for key in plan(args, native):
            if key in have:
                continue
            method, setting, seed, rows = key
            epochs = 1 if rows == SHORT_ROWS else args.epochs
            record = run_one(method, setting, seed, rows, epochs, train, Path(tmp))
            record["commit"] = commit()
            print(json.dumps(record), flush=True)
            with RUNS.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            have[key] = record
    OUT.write_text(render(list(have.values()), args, native))
    print(OUT.read_text())


def commit() -> str:
    import subprocess

    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()


if __name__ == "__main__":
    main()
