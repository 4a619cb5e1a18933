"""Benchmark: LoRA on SmolLM2-135M in fp32, bf16, 8-bit and 4-bit, beside the default encoder.

    .venv/bin/python bench/models.py [--rows 1000] [--eval-rows 500] [--epochs 1]
        [--only fp32,bf16,8bit,4bit,encoder] [--device cpu] [--data SST2_DIR] [--out bench/MODELS.md] [--redo]

SST-2: ``--rows`` training rows (``sample(n, random_state=0)`` of train.csv) and a fixed
``--eval-rows`` subset of the dev split (``sample(n, random_state=0)`` of dev.csv), LoRA r=8
on the query/value projections, its fixed learning rate (2e-3), batch 16, max length 64,
seed 0, no early stopping; the same for every row. Each configuration trains in its own
process (bench/models_run.py), so its peak RSS (and peak GPU memory) is its own. "Model
memory" is the base model as loaded with the row's quantization config
(``get_memory_footprint()``). Every row is appended to ``<out stem>_runs.jsonl`` as it
finishes (bench/models_runs.jsonl for the default ``--out``); a rerun with the same settings
skips the rows already there, and the report is rewritten after every row.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.models_run import BATCH_SIZE, GRID, MAX_LENGTH, SEED, SYNTHETIC, SYNTHETIC_ROWS  # noqa: E402 - needs ROOT

SST2 = ROOT.parent / "shared" / "data" / "sst2"
COMMIT = subprocess.run(
    ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
).stdout.strip()
SETTINGS = ("rows", "eval_rows", "epochs", "device")  # a stored row counts for these only
MEMORY_RATIO_TARGET, ACCURACY_POINTS_TARGET = 0.6, 2.0


def subsets(args: argparse.Namespace, folder: Path) -> tuple[Path, Path]:
    """The seeded training sample and the fixed evaluation subset, as CSV files; ``args`` gets
    the row counts they really hold (a split may be smaller than asked)."""
    import pandas as pd

    paths = []
    for split, attr in (("train", "rows"), ("dev", "eval_rows")):
        frame = pd.read_csv(args.data / f"{split}.csv")
        setattr(args, attr, min(getattr(args, attr), len(frame)))
        paths.append(folder / f"{split}.csv")
        frame.sample(n=getattr(args, attr), random_state=0).to_csv(paths[-1], index=False)
    return paths[0], paths[1]


def in_own_process(name: str, *extra: str) -> dict[str, Any]:
    cmd = [sys.executable, "bench/models_run.py", name, *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def train_one(name: str, train: Path, dev: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Train ``name`` in its own process; a quantized row first loads its base alone, in a
    process of its own too, so that the first quantization from fp32 (once per model and
    setting: later loads read the saved copy) is measured apart from the run."""
    files = ["--train", str(train), "--eval", str(dev)]
    first = in_own_process(name, *files, "--load-only") if GRID[name][1] != "none" else {}
    started = time.perf_counter()
    row = in_own_process(name, *files, "--epochs", str(args.epochs), "--device", args.device)
    row.update({k: v for k, v in first.items() if k != "name"})
    row.update({k: getattr(args, k) for k in SETTINGS})
    row.update(wall_seconds=round(time.perf_counter() - started, 1), commit=COMMIT, date=str(date.today()))
    return row


def stored(runs: Path, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The rows already run with these settings, by configuration name (the last one wins)."""
    if not runs.exists():
        return {}
    rows = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()]
    return {r["name"]: r for r in rows if all(r.get(k) == getattr(args, k) for k in SETTINGS)}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with open("/proc/cpuinfo") as fh:  # the marketing name; platform only gives "x86_64"
        cpu = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), cpu)
    libs = ", ".join(f"{lib} {version(lib)}" for lib in ("torch", "transformers", "peft", "bitsandbytes"))
    return f"{cpu}, {os.cpu_count()} cores; {libs}"


def fmt(value: Any, spec: str = ".0f") -> str:
    return "–" if value is None else format(value, spec)


def table(rows: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| configuration | base model | quantization | compute | accuracy | macro-F1 | s/epoch | train s "
        "| peak RSS MB | RSS at start MB | model memory MB | peak GPU MB | trainable "
        "| first quantizing load: peak RSS MB (copy) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in GRID:
        if name not in rows:
            continue
        r = rows[name]
        lines.append(
            f"| {name} | {r['model']} | {r['quant']} | {r['precision']} | {scores(r)} | "
            f"{fmt(r['seconds_per_epoch'], '.1f')} | {r['train_seconds']:.0f} | "
            f"{r['peak_rss_mb']:.0f} | {r['start_rss_mb']:.0f} | {r['model_mb']:.0f} | "
            f"{fmt(r['peak_gpu_mb'])} | {r['trainable_params']:,} | {first_load(r)} |"
        )
    return lines


def scores(row: dict[str, Any]) -> str:
    if row["model"] == SYNTHETIC:
        return "– | –"  # random weights: a score would mean nothing
    return f"{row['accuracy']:.3f} | {row['macro_f1']:.3f}"


def first_load(row: dict[str, Any]) -> str:
    peak = row.get("first_load_peak_rss_mb")
    return "–" if peak is None else f"{peak:.0f} ({row.get('copy')})"


def verdict(rows: dict[str, dict[str, Any]], device: str) -> list[str]:
    """The target, worked out from the rows: 4-bit peak memory at most 0.6x fp32's, accuracy
    within 2 points of fp32's."""
    if "fp32" not in rows or "4bit" not in rows:
        return ["Target: needs both the fp32 and the 4bit rows."]
    key = "peak_gpu_mb" if device.startswith("cuda") else "peak_rss_mb"
    fp32, q4 = rows["fp32"], rows["4bit"]
    ratio = q4[key] / fp32[key]
    points = 100 * (q4["accuracy"] - fp32["accuracy"])
    memory_ok, accuracy_ok = ratio <= MEMORY_RATIO_TARGET, abs(points) <= ACCURACY_POINTS_TARGET
    what = "peak GPU memory" if key == "peak_gpu_mb" else "peak RSS"
    return [
        f"- {what}, 4bit / fp32: {q4[key]:.0f} / {fp32[key]:.0f} MB = **{ratio:.2f}** "
        f"(target ≤ {MEMORY_RATIO_TARGET}): **{'met' if memory_ok else 'missed'}**",
        f"- accuracy, 4bit − fp32: {q4['accuracy']:.3f} − {fp32['accuracy']:.3f} = **{points:+.1f} points** "
        f"(target within ±{ACCURACY_POINTS_TARGET:.0f}): **{'met' if accuracy_ok else 'missed'}**",
        f"- model memory, 4bit / fp32: {q4['model_mb']:.0f} / {fp32['model_mb']:.0f} MB = "
        f"{q4['model_mb'] / fp32['model_mb']:.2f} (the weights alone)",
        f"- overall: **{'met' if memory_ok and accuracy_ok else 'missed'}**",
        *floor(fp32, q4, key),
        *larger(rows, key),
    ]


def larger(rows: dict[str, dict[str, Any]], key: str) -> list[str]:
    if "360m-fp32" not in rows or "360m-4bit" not in rows:
        return []
    fp32, q4 = rows["360m-fp32"], rows["360m-4bit"]

    def beyond(r: dict[str, Any]) -> float:  # what training held beyond the process and weights
        return r[key] - r["start_rss_mb"] - r["model_mb"]

    return [
        f"- where the weights weigh more, the random-weight 360M LLaMA: 4bit / fp32 "
        f"{q4[key]:.0f} / {fp32[key]:.0f} MB = **{q4[key] / fp32[key]:.2f}** (weights "
        f"{q4['model_mb']:.0f} / {fp32['model_mb']:.0f} MB; memory and speed only). Its 4-bit "
        f"training held {beyond(q4):.0f} MB beyond the process and the weights against fp32's "
        f"{beyond(fp32):.0f} MB, so on this CPU the saving grows more slowly than the weights.",
    ]


def floor(fp32: dict[str, Any], q4: dict[str, Any], key: str) -> list[str]:
    """The best ratio this model size allows: what both rows share (the process before any
    weights, the activations and the optimizer's scratch) does not shrink with the weights."""
    if key != "peak_rss_mb":
        return []
    best = (q4["start_rss_mb"] + q4["model_mb"]) / (fp32["start_rss_mb"] + fp32["model_mb"])
    shared = fp32["peak_rss_mb"] - fp32["start_rss_mb"] - fp32["model_mb"]
    return [
        f"- the floor at this model size: even with no memory for training at all, (RSS at start + "
        f"model memory) gives {q4['start_rss_mb'] + q4['model_mb']:.0f} / "
        f"{fp32['start_rss_mb'] + fp32['model_mb']:.0f} MB = **{best:.2f}**; the fp32 run's training "
        f"itself (activations, gradients, the allocator's scratch) took a further {shared:.0f} MB, "
        "which 4-bit weights do not shrink.",
    ]


def render(rows: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    gpu = next((r["gpu"] for r in rows.values() if r.get("gpu")), None)
    dates = sorted({r["date"] for r in rows.values()})
    commits = sorted({r["commit"] for r in rows.values()})
    return "\n".join(
        [
            "# LoRA on SmolLM2-135M: fp32, bf16, 8-bit, 4-bit (bench/models.py)",
            "",
            f"`{args.command}`, run {', '.join(dates)} at commit {', '.join(commits)} on {machine()}"
            + (f"; GPU: {gpu}" if gpu else "")
            + f"; device {args.device}.",
            "",
            f"SST-2: {args.rows} training rows (`sample(n, random_state=0)` of train.csv), a fixed "
            f"{args.eval_rows}-row subset of the dev split (`sample(n, random_state=0)` of dev.csv; "
            f"one seed on {args.eval_rows} rows is about ±{100 * (0.25 / args.eval_rows) ** 0.5:.1f} "
            f"points of noise), LoRA r=8 on q,v, learning rate 2e-3 (LoRA's fixed default), "
            f"{args.epochs} epoch(s), batch {BATCH_SIZE}, max length {MAX_LENGTH}, seed {SEED}, no "
            "early stopping. Each row trained in its own process. The quantized rows (bitsandbytes "
            "8-bit; 4-bit NF4 with double quantization) compute in fp32; *bf16* is bf16 autocast over "
            "fp32 weights. *RSS at start*: the process after importing torch and transformers, before "
            "any weights. *Model memory*: the base classifier as loaded with the row's quantization "
            "config (`get_memory_footprint()`). SmolLM2 is the workbench's offline copy (dequantized "
            "from the Q4_1 GGUF); *encoder* is the default all-MiniLM-L6-v2 (fp32 LoRA); *360m* is "
            "SmolLM2-360M's published shape with random weights (no 360M model ships offline), "
            f"trained on {SYNTHETIC_ROWS} of the rows (`max_train_samples`) for its memory and "
            "speed only. *First quantizing load*: a process of its own that only loads the row's "
            "quantized base, just before the row's run; *made*: it quantized the fp32 weights and "
            "saved the quantized copy (backend/quantized_copy.py) that the run then read; *read*: "
            "the copy was already there.",
            "",
            *table(rows),
            "",
            "## Target: with 4-bit, peak memory at most 0.6x fp32's, accuracy within 2 points",
            "",
            *verdict(rows, args.device),
            "",
        ]
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--eval-rows", type=int, default=500)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--only", default=",".join(GRID), help="comma-separated: " + ",".join(GRID))
    p.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    p.add_argument("--data", type=Path, default=SST2, help="the SST-2 folder (train.csv, dev.csv)")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "MODELS.md")
    p.add_argument("--redo", action="store_true", help="run the --only rows again even if stored")
    args = p.parse_args()
    args.command = "python bench/models.py " + " ".join(sys.argv[1:])
    unknown = set(args.only.split(",")) - set(GRID)
    if unknown or not (args.data / "train.csv").is_file():
        problem = (
            f"unknown configurations: {', '.join(sorted(unknown))}"
            if unknown
            else f"no train.csv in {args.data}"
        )
        print(problem, file=sys.stderr)
        return 2
    runs = args.out.with_name(args.out.stem.lower() + "_runs.jsonl")
    train, dev = subsets(args, Path(tempfile.mkdtemp(prefix="bench-models-")))
    for name in args.only.split(","):
        if name in stored(runs, args) and not args.redo:
            continue
        print(f"{name} ...", flush=True)
        try:
            row = train_one(name, train, dev, args)
        except RuntimeError as exc:  # one failed configuration must not end the benchmark
            print(exc, file=sys.stderr, flush=True)
            continue
        print(json.dumps(row), flush=True)
        with runs.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        args.out.write_text(render(stored(runs, args), args))
    if stored(runs, args):
        args.out.write_text(render(stored(runs, args), args))
    print(args.out.read_text() if args.out.exists() else "no rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
