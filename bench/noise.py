"""Benchmark (issue 37): do two methods' places swap between seeds, and does Compare say so?

    .venv/bin/python bench/noise.py [--dataset sst2] [--methods lora,full] [--seeds 0,1,2]

Pairs bench/tasks.py's "auto" runs of the methods on the same dataset seed by seed, on the same
evaluation rows, with the product's own comparison (``backend.significance.compare_runs``: each
score's 95% interval, the difference's paired-bootstrap interval, McNemar's exact test). The
runs are the newest of bench/tasks_runs.jsonl; their folders (with ``eval_predictions.parquet``)
are where bench/tasks.py left them (``artifact``; for rows from before it recorded that, the
newest ``bench-tasks-*/<dataset>-<method>-auto-<seed>`` under the temporary folder). A missing
run is trained here first, as bench/tasks.py would. Appends to bench/noise_runs.jsonl and writes
bench/NOISE.md (which bench/TASKS.md includes) with a section per pairing it holds.
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
from bench.tasks import COMMIT, DATASETS, done_runs, run_one, train_subset  # noqa: E402

REPORT = ROOT / "bench" / "NOISE.md"
RUNS = ROOT / "bench" / "noise_runs.jsonl"


def run_folder(dataset: str, method: str, seed: int, rows: int) -> Path:
    """The folder of the newest auto run of the cell with its predictions (trained if none)."""
    row = done_runs().get((dataset, method, "auto", seed)) or {}
    if row.get("artifact") and (Path(row["artifact"]) / "eval_predictions.parquet").is_file():
        return Path(row["artifact"])
    pattern = f"bench-tasks-*/{dataset}-{method}-auto-{seed}/eval_predictions.parquet"
    found = sorted(Path(tempfile.gettempdir()).glob(pattern), key=lambda p: p.stat().st_mtime)
    if found:
        return found[-1].parent
    folder = Path(tempfile.mkdtemp(prefix="bench-noise-"))
    out = folder / f"{dataset}-{method}-auto-{seed}"
    print(f"training {dataset} {method} seed {seed} ...", flush=True)
    run_one(dataset, method, "auto", seed, train_subset(dataset, rows, folder), out)
    return out


def render(results: list[dict[str, Any]], dataset: str, methods: list[str]) -> str:
    lines = [
        f"## {dataset}: {' against '.join(methods)} across seeds, as Compare sees them (issue 37, "
        f"`python bench/noise.py --dataset {dataset} --methods {','.join(methods)}`)",
        "",
        f"{dataset}, bench/tasks.py's auto runs of {' and '.join(methods)}, paired seed by seed on the "
        "same evaluation rows by `app.py compare`'s code: each accuracy with its 95% bootstrap "
        "interval, then the other run against the better one (difference, its paired-bootstrap "
        "interval, McNemar's exact p-value, verdict).",
        "",
        "| seed | " + " | ".join(methods) + " | better | difference [95% CI] | p | Compare says |",
        "|---:|" + "---:|" * len(methods) + "---|---:|---:|---|",
    ]
    order = []
    for r in results:
        scores = {run["run"]: run for run in r["runs"]}
        (pair,) = r["pairs"]
        cells = [f"{scores[m]['score']:.3f} [{scores[m]['score_ci'][0]:.3f}, {scores[m]['score_ci'][1]:.3f}]"
                 for m in methods]  # fmt: skip
        delta = -pair["delta"]  # the better run minus the other
        lines.append(
            f"| {r['seed']} | " + " | ".join(cells) + f" | {r['best']} | {delta:+.3f} "
            f"[{-pair['delta_ci'][1]:+.3f}, {-pair['delta_ci'][0]:+.3f}] | {pair['p_value']:.3f} | "
            f"{pair['verdict']} |"
        )
        order.append(r["best"])
    verdicts = [r["pairs"][0]["verdict"] for r in results]
    if len(set(order)) > 1:
        sentence = (
            f"The better method changes with the seed ({', '.join(order)}), and Compare's verdicts are "
            f"{', '.join(verdicts)}: a verdict other than *within noise* at a seed where the order is "
            "reversed elsewhere would have named a winner that another seed takes back."
        )
    else:
        sentence = f"The same method is ahead at every seed ({order[0] if order else '–'}): no swap here."
    lines += ["", sentence]
    return "\n".join(lines).rstrip() + "\n"


def timing(results: list[dict[str, Any]]) -> str:
    """How long Compare's statistics take: on these runs, and on 2,000 synthetic rows."""
    import numpy as np
    import pandas as pd

    from backend.significance import compare_runs

    rng = np.random.default_rng(0)
    true = rng.integers(0, 6, 2000)
    frames = []
    for name in ("a", "b"):
        predicted = np.where(rng.random(2000) < 0.8, true, (true + 1) % 6)
        texts = [f"t{i}" for i in range(2000)]
        columns = {"row": range(2000), "text": texts, "pair": [None] * 2000, "true": true}
        columns["predicted"] = predicted
        frames.append((name, pd.DataFrame(columns)))
    started = time.perf_counter()
    compare_runs(frames)
    synthetic = time.perf_counter() - started
    real = ", ".join(f"{r['seconds']:.2f} s" for r in results)
    return (
        f"\nCompare's statistics (two intervals, the paired interval and McNemar's test) took {real} "
        f"on these runs' {results[0]['eval_rows'] if results else 0} rows (the first in this process "
        f"includes importing scipy.stats), and {synthetic:.2f} s on 2,000 synthetic rows of 6 classes "
        "(the issue's budget: 1 s).\n"
    )


def main() -> int:
    from backend.artifacts.predictions import read_predictions
    from backend.significance import compare_runs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="sst2", choices=list(DATASETS))
    p.add_argument("--methods", default="lora,full")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--report-only", action="store_true", help="rewrite bench/NOISE.md from the runs file")
    args = p.parse_args()
    methods = args.methods.split(",")
    results = []
    for seed in [] if args.report_only else map(int, args.seeds.split(",")):
        named = [(m, read_predictions(run_folder(args.dataset, m, seed, args.rows))) for m in methods]
        started = time.perf_counter()
        compared = compare_runs(named)
        seconds = round(time.perf_counter() - started, 3)
        result = {"dataset": args.dataset, "seed": seed, **compared, "seconds": seconds, "commit": COMMIT}
        print(json.dumps(result), flush=True)
        results.append(result)
    if results:
        with RUNS.open("a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in results)
    REPORT.write_text(report() + timing(results or newest()[-1][2]))
    print(REPORT.read_text())
    return 0


def newest() -> list[tuple[str, list[str], list[dict[str, Any]]]]:
    """Every pairing bench/noise_runs.jsonl holds, in the order first run: (dataset, methods,
    the newest result per seed)."""
    groups: dict[tuple[str, tuple[str, ...]], dict[int, dict[str, Any]]] = {}
    for line in RUNS.read_text().splitlines() if RUNS.is_file() else []:
        r = json.loads(line)
        groups.setdefault((r["dataset"], tuple(run["run"] for run in r["runs"])), {})[r["seed"]] = r
    return [(d, list(m), [by_seed[k] for k in sorted(by_seed)]) for (d, m), by_seed in groups.items()]


def report() -> str:
    """A section per pairing, the newest result of each seed."""
    return "\n".join(render(results, dataset, methods) for dataset, methods, results in newest())


if __name__ == "__main__":
    sys.exit(main())
