"""Benchmark: training speed of the old loop against the new defaults, on every method.

    .venv/bin/python bench/speed.py [--rows 2000] [--epochs 3] [--seeds 0,1,2] [--only lora,full]

Protocol of ../shared/BASELINE.md (SST-2, the same 2,000 training rows, all 872 dev rows,
batch 32, max length 128, each method's fixed learning rate, every epoch trained), one
process per run, everything in one invocation on one machine:

* **old**: random batches, fp32 (the loop before length grouping and mixed precision);
* **new**: the defaults: length-grouped batches, precision "auto";
* **grouping alone** and **bf16 alone**, to separate the two (on a CPU without native bf16,
  "auto" is fp32, so *new* is grouping alone; bf16 alone is then timed on a short run only,
  since it is emulated there and slower than fp32);
* **top 2 of 6 layers** (LoRA, Houlsby adapter) over cached lower layers: epoch 1 (which
  builds the cache) and later epochs apart, with accuracy;
* **prediction** rows/s of an exported run, length-sorted against plain batches.

Results go to bench/speed_runs.jsonl (a rerun skips the runs already there; delete it to
start over) and bench/SPEED.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.methods import METHODS, SST2, baseline_subset, train_cli  # noqa: E402

RUNS = ROOT / "bench" / "speed_runs.jsonl"
OUT = ROOT / "bench" / "SPEED.md"
OLD = ["--no-group-by-length", "--precision", "fp32"]
SETTINGS: dict[str, list[str]] = {
    "old": OLD,
    "new": [],
    "grouped_fp32": ["--precision", "fp32"],
    "bf16_alone": ["--no-group-by-length", "--precision", "bf16"],
    "top2": ["--set", "top_layers=2"],
}
SHORT_ROWS = 128  # bf16 alone on a CPU that emulates it (~20x slower here): a short run gives the ratio


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
    summary = train_cli(method, out, train, epochs, extra)
    keep = (
        "accuracy", "macro_f1", "seconds_per_epoch", "epoch_seconds", "train_seconds", "tokens_per_second",
        "padding_share", "mfu", "peak_tflops", "precision", "trainable_params", "peak_rss_mb",
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
            for seed in seeds if method in ("lora", "full") else seeds[:1]:
                todo.append((method, setting, seed, args.rows))
        if method in ("lora", "adapter"):
            todo.append((method, "top2", seeds[0], args.rows))
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


def mean_sd(values: list[float], digits: int = 3) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def pick(results: list[dict[str, Any]], method: str, setting: str, rows: int) -> list[dict[str, Any]]:
    return [r for r in results if r["method"] == method and r["setting"] == setting and r["rows"] == rows]


def render(results: list[dict[str, Any]], args: argparse.Namespace, native: bool) -> str:
    lines = [
        "# Speed: the old loop against the new defaults",
        "",
        f"`python bench/speed.py --rows {args.rows} --epochs {args.epochs} --seeds {args.seeds}` on "
        f"{platform.processor() or platform.machine()} ({_cpu_line()}); one process per run, all in one "
        "invocation. Protocol of ../shared/BASELINE.md: SST-2, the first "
        f"{args.rows} rows of its seeded shuffle, all 872 dev rows, batch 32, max length 128, each "
        "method's fixed learning rate, every epoch trained (no early stopping). *old* = random "
        "batches in fp32; *new* = the defaults (length-grouped batches, precision auto"
        + ("" if native else ", which is fp32 on this CPU: it has no native bf16, so *new* is grouping alone")
        + "). s/epoch is training time per epoch (evaluation excluded); accuracy on the dev set; "
        "where several seeds ran, mean ± standard deviation.",
        "",
        "| method | old s/epoch | new s/epoch | speed-up | old accuracy | new accuracy "
        "| tokens/s new | padding old → new | MFU new | seeds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in METHODS:
        old, new = pick(results, method, "old", args.rows), pick(results, method, "new", args.rows)
        if not old or not new:
            continue
        so = statistics.mean(r["seconds_per_epoch"] for r in old)
        sn = statistics.mean(r["seconds_per_epoch"] for r in new)
        pad = (
            f"{_mean(old, 'padding_share'):.0%} → {_mean(new, 'padding_share'):.0%}"
            if new[0].get("padding_share") is not None
            else "–"
        )
        tps = f"{_mean(new, 'tokens_per_second'):,.0f}" if new[0].get("tokens_per_second") else "–"
        mfu = f"{_mean(new, 'mfu'):.0%}" if new[0].get("mfu") is not None else "–"
        lines.append(
            f"| {method} | {so:.2f} | {sn:.2f} | **{so / sn:.2f}x** "
            f"| {mean_sd([r['accuracy'] for r in old])} | {mean_sd([r['accuracy'] for r in new])} "
            f"| {tps} | {pad} | {mfu} | {len(new)} |"
        )
    if pick(results, "probe", "new", args.rows):
        lines += [
            "",
            "The probe's epochs train a head on cached features (milliseconds); its cost is the one "
            "encoder pass over the data, which was already length-sorted before this change, so its "
            "figures here are noise, not a speed-up.",
        ]
    lines += _bf16_section(results, args, native)
    lines += _top_section(results, args) + _prediction_section(results, args)
    return "\n".join(lines) + "\n"


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.mean(r[key] for r in rows if r.get(key) is not None)


def _cpu_line() -> str:
    import os

    from backend.training.runtime import precision_line

    return f"{os.cpu_count()} cores; precision auto = {precision_line('cpu')}"


def _bf16_section(results: list[dict[str, Any]], args: argparse.Namespace, native: bool) -> list[str]:
    rows = SHORT_ROWS if not native else args.rows
    lines = ["", "## Length grouping alone and bf16 alone", ""]
    if not native:
        lines.append(
            f"This CPU has no native bf16, so *new* above is length grouping alone. bf16 autocast "
            f"(random batches) against fp32 (random batches) on a short run ({rows} rows, 1 epoch):"
        )
    lines += [
        "",
        "| method | fp32 s/epoch | bf16 s/epoch | bf16 speed-up | fp32 acc | bf16 acc |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for method in METHODS:
        fp32 = pick(results, method, "old", rows)
        bf16 = pick(results, method, "bf16_alone", rows)
        if fp32 and bf16:
            a, b = fp32[0]["seconds_per_epoch"], bf16[0]["seconds_per_epoch"]
            lines.append(
                f"| {method} | {a:.2f} | {b:.2f} | {a / b:.2f}x "
                f"| {fp32[0]['accuracy']:.3f} | {bf16[0]['accuracy']:.3f} |"
            )
    return lines


def _top_section(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    lines = [
        "",
        "## Top 2 of 6 layers over cached lower layers",
        "",
        "Epoch 1 includes building the cache (one no-gradient pass over the training and dev rows).",
        "",
        "| method | layers | epoch 1 s | later epochs s (mean) | later / all-layers | accuracy | trainable |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for method in ("lora", "adapter"):
        full = [r for r in pick(results, method, "new", args.rows) if r["seed"] == 0]
        top = pick(results, method, "top2", args.rows)
        if not full or not top:
            continue
        f_later = statistics.mean(full[0]["epoch_seconds"][1:] or full[0]["epoch_seconds"])
        t_later = statistics.mean(top[0]["epoch_seconds"][1:] or top[0]["epoch_seconds"])
        for name, r, later in (("all 6", full[0], f_later), ("top 2", top[0], t_later)):
            ratio = f"{later / f_later:.2f}"
            lines.append(
                f"| {method} | {name} | {r['epoch_seconds'][0]:.2f} | {later:.2f} | {ratio} "
                f"| {r['accuracy']:.3f} | {r['trainable_params']:,} |"
            )
    return lines


def _prediction_section(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    measured = [r for r in pick(results, "lora", "old", args.rows) + pick(results, "lora", "new", args.rows)]
    measured = [r for r in measured if r.get("prediction")]
    if not measured:
        return []
    p = measured[-1]["prediction"]
    each = "; ".join(
        f"after the {r['setting']} run: {r['prediction']['sorted_rows_per_s']:.0f} vs "
        f"{r['prediction']['plain_rows_per_s']:.0f} rows/s"
        for r in measured
    )
    return [
        "",
        "## Prediction",
        "",
        f"Measured {len(measured)} times ({each}).",
        "",
        "The exported LoRA run predicting the 872 dev rows (batch 64): "
        f"**{p['sorted_rows_per_s']:.0f} rows/s** with "
        f"length-sorted batches (the Predictor) against {p['plain_rows_per_s']:.0f} rows/s in plain batches "
        f"({p['sorted_rows_per_s'] / p['plain_rows_per_s']:.2f}x).",
    ]


if __name__ == "__main__":
    main()
