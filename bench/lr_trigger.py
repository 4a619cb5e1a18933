"""Benchmark (issue 36): where does a rate win the short search and lose the run?

    .venv/bin/python bench/lr_trigger.py [--methods lora] [--datasets sst2,emotion]
        [--rows 300,1000,3000] [--max-lengths 64,128] [--seeds 0,1] [--full]

A case is a dataset, a number of training rows (a seeded sample), a max length and a seed.
Step 1, every case: the learning-rate search alone (bench/lr_search.search_one) and its choice.
Step 2, with ``--full``, for the cases where the search chose its highest candidate or a rate
above the method's default: the run at "auto" and, at a fixed rate, every candidate trained in
full (epochs auto, early stopping), so the search's choice stands beside the score each rate
reaches. Rows are appended to bench/lr_trigger_runs.jsonl as they finish (a rerun skips them);
bench/LR_TRIGGER.md is rewritten from that file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from backend.training.config import AUTO
from bench.lr_search import search_one
from bench.tasks import COMMIT, DATASETS, SHARED, train_subset

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "bench" / "lr_trigger_runs.jsonl"
REPORT = ROOT / "bench" / "LR_TRIGGER.md"


# Rows recorded before the search's window (issue 36) name no candidates: LoRA's grid then.
BEFORE_WINDOW = "0.0003,0.001,0.003,0.01"


def case_key(r: dict[str, Any]) -> tuple[Any, ...]:
    """A case and the candidates its search had: the same case under another grid is another row."""
    grid = r.get("candidates", BEFORE_WINDOW)
    return (r["dataset"], r["method"], r["rows"], r["max_length"], r["seed"], grid)


def grid(method: str) -> str:
    return ",".join(f"{lr:g}" for lr in candidates_of(method))


def full_run(
    dataset: str, method: str, train: Path, out: Path, lr: float | str, **settings: Any
) -> dict[str, Any]:
    """One complete run at ``lr`` (a number, or "auto"); its score on the dataset's own metric."""
    from backend.run import run_training
    from backend.training.config import TrainConfig

    split, metric = DATASETS[dataset]
    cfg = TrainConfig(
        data=str(train), eval_data=str(SHARED / dataset / f"{split}.csv"), method=method, lr=lr, **settings
    )
    started = time.perf_counter()
    s = run_training(cfg, out)
    return {
        "score": s[metric],
        "lr": s["lr"],
        "best_epoch": s["best_epoch"],
        "epochs": s["epochs"],
        "epochs_run": s.get("epochs_run"),
        "lr_choice_warning": s.get("lr_choice_warning"),
        "seconds": round(time.perf_counter() - started, 1),
    }


def suspicious(search: dict[str, Any], method: str) -> bool:
    """The search chose a rate above the candidate nearest the method's default (the rates a
    short search favours; with LoRA's grid before the window, 1e-2 over 3e-3)."""
    from backend.methods import registry
    from backend.training.lr_search_noise import nearest_rate

    spec = registry.get(method)
    return search["chosen"] > nearest_rate(list(search["candidates"]), spec.default_lr) * 1.01


def candidates_of(method: str) -> list[float]:
    """The method's candidates at its default settings (the cases use no other)."""
    from backend.methods import registry

    spec = registry.get(method)
    return sorted(spec.learning_rates(spec.make_config()))


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Where a rate wins the short search and loses the run (`bench/lr_trigger.py`)",
        "",
        "Each case: a seeded sample of the training rows, the dataset's own evaluation split, batch 32, "
        "epochs auto, early stopping. *chosen*: what the search chose (it stops there); *auto run*: "
        "the full run with the learning rate auto; then every candidate run in full at a fixed rate, "
        "for the cases where the search chose its highest candidate or a rate above the method's "
        "default. *default run*: at the method's fixed default (2e-3 for LoRA; rows whose first "
        "'auto' run passed no rate, which means the default). Score: accuracy, macro-F1 for sms_spam.",
        "",
        "| dataset | method | rows | max length | seed | candidates | chosen | auto run | default run "
        "| each candidate in full | best − auto | code |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---|---:|---|",
    ]
    for r in rows:
        full = r.get("full") or {}
        cands = "; ".join(f"{lr}: {v['score']:.3f} (best epoch {v['best_epoch']})" for lr, v in full.items())
        auto, default = r.get("auto"), r.get("default")
        best = max((v["score"] for v in full.values()), default=None)
        gap = f"{best - auto['score']:+.3f}" if auto and best is not None else "–"
        scores = [f"{run['score']:.3f}" if run else "–" for run in (auto, default)]
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['rows']} | {r['max_length']} | {r['seed']} | "
            f"{r.get('candidates', BEFORE_WINDOW)} | {r['chosen']:g} | {scores[0]} | {scores[1]} | "
            f"{cands or '–'} | {gap} | {r['commit']} |"
        )
    return "\n".join(lines) + "\n"


def run_case(
    key: tuple[Any, ...],
    row: dict[str, Any] | None,
    train: Path,
    full: bool,
    folder: Path,
    earlier: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A case's search (unless recorded), then its full runs if asked and the choice is suspect
    (or ``earlier``, the same case under the grid before the window, had full runs)."""
    dataset, method, _, max_length, seed, _ = key
    settings = {"seed": seed, "max_length": max_length}
    if row is None:
        search = search_one(dataset, method, train, **settings)
        row = dict(zip(("dataset", "method", "rows", "max_length", "seed", "candidates"), key, strict=True))
        row |= {"chosen": search["chosen"], "search_log": search["log"], "commit": COMMIT}
    candidates = candidates_of(method)
    if full and (earlier or suspicious({"chosen": row["chosen"], "candidates": candidates}, method)):
        # A case suspect under the earlier grid is run again under this one: its candidates'
        # fixed-rate runs do not depend on the grid and are taken from the earlier row.
        before = (earlier or {}).get("full", {})
        row.setdefault("full", {k: v for k, v in before.items() if float(k) in candidates})
        out = folder / "-".join(map(str, key))
        if "auto" not in row:
            row["auto"] = full_run(dataset, method, train, out / "auto", AUTO, **settings)
        for lr in candidates:
            if f"{lr:g}" not in row["full"]:
                row["full"][f"{lr:g}"] = full_run(dataset, method, train, out / f"{lr:g}", lr, **settings)
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", default="lora")
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--rows", default="300,1000,3000")
    p.add_argument("--max-lengths", default="64,128")
    p.add_argument("--seeds", default="0")
    p.add_argument("--full", action="store_true", help="also run the suspect cases in full")
    args = p.parse_args()
    if not SHARED.is_dir():
        print(f"no shared data at {SHARED}", file=sys.stderr)
        return 2
    done = {case_key(r): r for r in map(json.loads, RUNS.read_text().splitlines())} if RUNS.exists() else {}
    folder = Path(tempfile.mkdtemp(prefix="bench-lr-trigger-"))
    cases = [
        (dataset, method, rows, max_length, seed, grid(method))
        for dataset in args.datasets.split(",")
        for rows in map(int, args.rows.split(","))
        for method in args.methods.split(",")
        for max_length in map(int, args.max_lengths.split(","))
        for seed in map(int, args.seeds.split(","))
    ]
    for key in cases:
        train = train_subset(key[0], key[2], folder)
        earlier = done.get((*key[:-1], BEFORE_WINDOW)) if key[-1] != BEFORE_WINDOW else None
        grid_before = [float(lr) for lr in BEFORE_WINDOW.split(",")]
        if earlier and not suspicious({"chosen": earlier["chosen"], "candidates": grid_before}, key[1]):
            earlier = None  # the window changed nothing a full run should check
        done[key] = run_case(key, done.get(key), train, args.full, folder, earlier)
        print(json.dumps(done[key]), flush=True)
        RUNS.write_text("".join(json.dumps(r) + "\n" for r in done.values()))
        REPORT.write_text(render(list(done.values())))
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
