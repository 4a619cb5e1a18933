"""Benchmark: how far can a probe of the frozen encoder go? Every probe setting, on every layer.

    .venv/bin/python bench/probe_ceiling.py [--rows 1000] [--datasets emotion]

bench/TASKS.md holds the probe to the issue's target (within 5 points of full fine-tuning).
On emotion it misses by ~24 points. This asks whether any probe could meet it, or whether the
frozen features are the limit: on the same training rows and evaluation split as bench/tasks.py,

* the product's probe, every head (linear, MLP) × pooling (mean, [CLS]) with a layer sweep
  (one head per layer, learning rate and epochs auto), reporting each layer's score;
* an outside reference on the same cached features: scikit-learn's logistic regression on
  every layer's mean-pooled features at once (standardised, its regularisation chosen by
  5-fold cross-validation on the training rows).

The best layer is picked on the evaluation split itself, so every figure here is an upper
bound on what that probe setting can score; full fine-tuning (bench/TASKS.md, auto, seed 0)
is the comparison. Writes bench/PROBE_CEILING.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.tasks import COMMIT, DATASETS, RUNS, SHARED, train_subset

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "bench" / "PROBE_CEILING.md"
SETTINGS = [(head, pooling) for head in ("linear", "mlp") for pooling in ("mean", "cls")]


def probe_sweep(dataset: str, head: str, pooling: str, train: Path, out: Path, cache: Path) -> dict[str, Any]:
    """The product's probe with a layer sweep; returns its summary (per-layer scores included)."""
    from backend.run import run_training
    from backend.training.config import TrainConfig

    split, _ = DATASETS[dataset]
    cfg = TrainConfig(
        data=str(train),
        eval_data=str(SHARED / dataset / f"{split}.csv"),
        method="probe",
        method_config={"head": head, "pooling": pooling, "sweep_layers": True},
        seed=0,
    )
    return run_training(cfg, out, feature_cache_dir=cache)


def all_layers_logistic(
    summary: dict[str, Any], cache: Path, train: Path, dataset: str, metric: str
) -> float:
    """Logistic regression on every layer's features side by side (regularisation by 5-fold CV)."""
    import numpy as np
    from safetensors.torch import load_file
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import accuracy_score, f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from backend.data.prepare import prepare

    split, _ = DATASETS[dataset]
    data = prepare(train, SHARED / dataset / f"{split}.csv")
    # the run's keys: training rows (its precision), then evaluation rows (fp32)
    train_key, eval_key = summary["feature_cache_keys"][:2]

    def flat(key: str, rows: int) -> np.ndarray:
        feats = load_file(str(cache / f"{key}.safetensors"))["features"].numpy()  # [layers, rows, hidden]
        assert feats.shape[1] == rows, f"cached features hold {feats.shape[1]} rows, the split {rows}"
        return np.concatenate(list(feats), axis=1)

    model = make_pipeline(StandardScaler(), LogisticRegressionCV(Cs=[0.01, 0.1, 1.0], cv=5, max_iter=3000))
    model.fit(flat(train_key, len(data.train.labels)), data.train.labels)
    predicted = model.predict(flat(eval_key, len(data.eval.labels)))
    if metric == "macro_f1":
        return float(f1_score(data.eval.labels, predicted, average="macro"))
    return float(accuracy_score(data.eval.labels, predicted))


def full_finetuning(dataset: str, metric: str) -> float | None:
    """bench/TASKS.md's full fine-tuning, auto, seed 0 (its newest row)."""
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    found = [
        r for r in rows if (r["dataset"], r["method"], r["config"], r["seed"]) == (dataset, "full", "auto", 0)
    ]
    return found[-1][metric] if found else None


def render(results: dict[str, dict[str, Any]], rows: int) -> str:
    lines = [
        "# How far can a probe of the frozen encoder go?",
        "",
        f"`python bench/probe_ceiling.py --rows {rows}` at {COMMIT}, seed 0, on bench/tasks.py's training "
        "rows and evaluation splits (all-MiniLM-L6-v2). Each probe setting trains one head per layer (0 = "
        "embeddings) with learning rate and epochs auto; *best* is its best layer, picked on the "
        "evaluation split itself, so it is an upper bound for that setting. *all layers, LR-CV*: "
        "scikit-learn's logistic regression on every layer's mean-pooled features side by side "
        "(standardised, regularisation by 5-fold cross-validation on the training rows). The default "
        "probe is linear, mean pooling, last layer.",
        "",
    ]
    for dataset, r in results.items():
        metric = DATASETS[dataset][1]
        full = r["full"]
        lines += [
            f"## {dataset} ({metric}; full fine-tuning, auto seed 0: {full:.3f})"
            if full is not None
            else f"## {dataset} ({metric})",
            "",
            "| probe | "
            + " | ".join(f"layer {i}" for i in range(len(r["sweeps"][0]["layers"])))
            + " | best | vs full FT |",
            "|---|" + "---:|" * (len(r["sweeps"][0]["layers"]) + 2),
        ]
        for s in r["sweeps"]:
            best = max(s["layers"])
            gap = f"{100 * (best - full):+.1f}" if full is not None else "–"
            cells = " | ".join(f"{v:.3f}" for v in s["layers"])
            lines.append(f"| {s['head']}, {s['pooling']} | {cells} | {best:.3f} | {gap} |")
        ref = r["all_layers_lr"]
        gap = f"{100 * (ref - full):+.1f}" if full is not None else "–"
        lines += [
            "| all layers, LR-CV | "
            + " | ".join("" for _ in r["sweeps"][0]["layers"])
            + f" | {ref:.3f} | {gap} |",
            "",
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--datasets", help="comma-separated dataset folders (default: all four)")
    args = p.parse_args()
    if not SHARED.is_dir():
        print(f"no shared data at {SHARED}", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-probe-"))
    results: dict[str, dict[str, Any]] = {}
    for dataset in args.datasets.split(",") if args.datasets else list(DATASETS):
        metric = DATASETS[dataset][1]
        train = train_subset(dataset, args.rows, folder)
        cache = folder / "features" / dataset
        sweeps, summaries = [], {}
        for head, pooling in SETTINGS:
            summary = probe_sweep(
                dataset, head, pooling, train, folder / f"{dataset}-{head}-{pooling}", cache
            )
            summaries[head, pooling] = summary
            layers = [row[metric] for row in summary["layer_accuracy"]]
            print(dataset, head, pooling, " ".join(f"{v:.3f}" for v in layers), flush=True)
            sweeps.append({"head": head, "pooling": pooling, "layers": layers})
        # the mean-pooled features, as the linear/mean sweep cached them
        reference = all_layers_logistic(summaries["linear", "mean"], cache, train, dataset, metric)
        print(dataset, "all layers, LR-CV", f"{reference:.3f}", flush=True)
        results[dataset] = {
            "sweeps": sweeps,
            "all_layers_lr": reference,
            "full": full_finetuning(dataset, metric),
        }
        REPORT.write_text(render(results, args.rows))
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
