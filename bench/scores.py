"""Benchmark (issue 38): the regression task on STS-B, every method at its defaults.

    .venv/bin/python bench/scores.py [--only lora,full] [--seeds 0] [--rows 1000] [--report]

Trains each method on ``--rows`` rows of ../shared/data/stsb/train.csv (all 1,000 by default)
with nothing set but the method (task auto, learning rate and epochs auto, max length 128,
batch 32) and scores it on dev.csv: Spearman (primary) with its 95% interval, Pearson, RMSE and
MAE. Beside the runs: the task's trivial baseline (the training mean) and the reference the
issue names, the base encoder's zero-shot cosine similarity of the two sentences' mean-pooled
embeddings (sentence-transformers, no training). Each run is appended to
bench/scores_runs.jsonl and a rerun skips the runs already there; bench/SCORES.md is written
from that file (bench/TASKS.md includes it).
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
from bench.runs_file import fmt, read_runs, run_pending  # noqa: E402
from bench.tasks import COMMIT, METHODS, SHARED  # noqa: E402

DATASET = "stsb"
RUNS = ROOT / "bench" / "scores_runs.jsonl"
REPORT = ROOT / "bench" / "SCORES.md"
KEEP = ("spearman", "pearson", "rmse", "mae", "score_ci", "lr", "epochs", "epochs_run", "best_epoch",
        "train_seconds", "seconds_per_epoch", "lr_search_share")  # fmt: skip


def done() -> dict[tuple[str, int, int], dict[str, Any]]:
    return {(r["method"], r["seed"], r["rows"]): r for r in read_runs(RUNS) if r.get("method")}


SWEEP = "probe all layers"  # the layer sweep: one probe per layer, each scored on dev


def run_one(method: str, seed: int, rows: int, folder: Path) -> dict[str, Any]:
    import pandas as pd

    from backend.run import run_training
    from backend.training.config import TrainConfig

    train = folder / f"{DATASET}-train-{rows}.csv"
    if not train.exists():
        frame = pd.read_csv(SHARED / DATASET / "train.csv")
        frame.sample(n=min(rows, len(frame)), random_state=0).to_csv(train, index=False)
    sweep = {"method": "probe", "method_config": {"sweep_layers": True}} if method == SWEEP else {}
    settings = {"method": method, **sweep}
    cfg = TrainConfig(data=str(train), eval_data=str(SHARED / DATASET / "dev.csv"), seed=seed, **settings)
    started = time.perf_counter()
    s = run_training(cfg, folder / f"{method.replace(' ', '-')}-{seed}")
    return {
        "method": method, "seed": seed, "rows": rows, "task": s["task"], **{k: s.get(k) for k in KEEP},
        "baseline": s.get("baseline"), "flag": bool(s.get("learning_flag")),
        "layers": s.get("layer_accuracy"),
        "wall_seconds": round(time.perf_counter() - started, 1), "commit": COMMIT,
    }  # fmt: skip


def zero_shot() -> dict[str, Any]:
    """The base encoder's cosine similarity of the two sentences, no training (the issue's 0.82)."""
    import numpy as np
    import pandas as pd
    from scipy import stats
    from sentence_transformers import SentenceTransformer

    from backend.catalogue import DEFAULT_MODEL, model_info

    dev = pd.read_csv(SHARED / DATASET / "dev.csv")
    model = SentenceTransformer(model_info(DEFAULT_MODEL).path, device="cpu")
    a = model.encode(dev["text_a"].astype(str).tolist(), normalize_embeddings=True)
    b = model.encode(dev["text_b"].astype(str).tolist(), normalize_embeddings=True)
    cosine = np.sum(a * b, axis=1)
    spearman = float(stats.spearmanr(cosine, dev["score"]).statistic)
    pearson = float(stats.pearsonr(cosine, dev["score"]).statistic)
    return {"reference": "zero-shot cosine", "spearman": spearman, "pearson": pearson, "commit": COMMIT}


def method_row(method: str, cells: list[dict[str, Any]]) -> str:
    spearman = fmt([c["spearman"] for c in cells])
    if len(cells) == 1:
        spearman += " [{:.3f}, {:.3f}]".format(*cells[0]["score_ci"])
    flag = " ⚠" if any(c["flag"] for c in cells) else ""
    rates = ", ".join(format(c["lr"], "g") for c in cells)
    epochs = ", ".join(f"{c['epochs_run']}/{c['epochs']}" for c in cells)
    per_epoch = cells[0]["seconds_per_epoch"]  # seed 0's: nothing else ran beside it
    commits = ", ".join(sorted({c["commit"] for c in cells}))
    errors = " | ".join(fmt([c[k] for c in cells]) for k in ("pearson", "rmse", "mae"))
    cells_text = [f"{method}{flag}", spearman, errors, rates, epochs, f"{per_epoch:.2f}", str(len(cells))]
    cells_text.append(commits)
    return "| " + " | ".join(cells_text) + " |"


def report() -> str:
    rows = read_runs(RUNS)
    runs = done()
    reference = next((r for r in reversed(rows) if r.get("reference")), None)
    lines = [
        "## stsb: regression, every method at its defaults (issue 38, `python bench/scores.py`)",
        "",
        "STS-B sentence pairs scored 0-5 (../shared/data/stsb): the 1,000 rows of train.csv, scored on "
        "the 375 rows of dev.csv. Task auto (it recognises the scores), learning rate and epochs auto, "
        "max length 128, batch 32. Spearman is primary; its 95% interval is the bootstrap over the "
        'dev rows. ⚠ = the run\'s "did not learn" flag (at or below the baseline).',
        "",
        "| method | Spearman [95% CI] | Pearson | RMSE | MAE | lr | epochs run / planned | s/epoch (seed 0) "
        "| seeds | code |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for method in [*METHODS, SWEEP]:
        cells = [r for (m, _, _), r in sorted(runs.items()) if m == method]
        if cells:
            lines.append(method_row(method, cells))
    sweeps = [r for (m, _, _), r in sorted(runs.items()) if m == SWEEP and r.get("layers")]
    baseline = next((r["baseline"] for r in runs.values() if r.get("baseline")), None)
    if baseline:
        lines.append(
            f"| *baseline: the training mean ({baseline['mean']:.2f})* | 0 | 0 | {baseline['rmse']:.3f} | "
            f"{baseline['mae']:.3f} | | | | | |"
        )
    if reference:
        lines.append(
            "| *reference: zero-shot cosine of the base encoder (no training)* | "
            f"{reference['spearman']:.3f} | {reference['pearson']:.3f} | | | | | | | |"
        )
    for run in sweeps:  # what each layer holds for this sentence-pair task
        layers = sorted(run["layers"], key=lambda r: r["layer"])
        lines += [
            "",
            f"Layer sweep (`probe`, `--layer all`, seed {run['seed']}): a linear probe on each layer's "
            "mean-pooled features of the pair, Spearman on dev (layer 0 = the embeddings).",
            "",
            "| layer | " + " | ".join(str(r["layer"]) for r in layers) + " |",
            "|---|" + "---:|" * len(layers),
            "| Spearman | " + " | ".join(f"{r['spearman']:.3f}" for r in layers) + " |",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated method keys")
    p.add_argument("--seeds", default="0")
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--report", action="store_true", help="only rewrite bench/SCORES.md")
    args = p.parse_args()
    if not (SHARED / DATASET).is_dir():
        print(f"skipped: {SHARED / DATASET} is absent", file=sys.stderr)
        return 0
    folder = Path(tempfile.mkdtemp(prefix="bench-scores-"))
    if args.report:
        REPORT.write_text(report())
        return 0
    if not any(r.get("reference") for r in read_runs(RUNS)):
        with RUNS.open("a") as fh:
            fh.write(json.dumps(zero_shot()) + "\n")
    methods = args.only.split(",") if args.only else [*METHODS, SWEEP]
    wanted = [(m, seed) for seed in map(int, args.seeds.split(",")) for m in methods]
    run_pending(RUNS, REPORT, report, wanted, args.rows, lambda m, seed: run_one(m, seed, args.rows, folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
