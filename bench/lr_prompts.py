"""Benchmark (issue 51): the search's window for the shallow-prompt methods, learned per method.

    .venv/bin/python bench/lr_prompts.py [--methods ptuning,prompt] [--datasets sst2,...]
        [--seeds 0,1,2] [--stage search|full|both|rates] [--grid +0.1] [--report]

Issue 36's window cut every method's candidates to half a decade above its default; its evidence
came from LoRA, IA3 and full fine-tuning. P-tuning then lost 0.1 and prompt tuning 0.1, and
P-tuning at its defaults fell from 0.904 to 0.808 on a held-out 6-class set. The sets: the four
label sets, the two token sets and the score set, 1,000 training rows each, scored on the
benches' usual evaluation splits.
- ``search``: each method's search under each grid of ``GRIDS``, stopped once it has chosen.
- ``full``: a seeded search that chooses the same rate under two grids trains the same run after
  it, so only the distinct choices of a cell are trained in full ("auto", under the grid that
  chose it).
- ``rates``: each rate of ``RATES`` trained in full (epochs auto, no search), so that the search's
  choice stands beside what each rate reaches.
Rows go to bench/lr_prompts_runs.jsonl as they finish (a rerun skips them); the report is a
section of bench/LR_SEARCH.md. The grids are patched into the method registry of this process
only (the product's grid is the method file's own).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.lr_search import REPORT, search_lines  # noqa: E402
from bench.runs_file import read_runs  # noqa: E402
from bench.tasks import COMMIT, DATASETS, SHARED, train_subset  # noqa: E402
from bench.tokens import rows_file  # noqa: E402

RUNS = ROOT / "bench" / "lr_prompts_runs.jsonl"
ROWS = 1000
# method -> grid name -> candidates. "window": what issue 36's window left; "+0.1": the rate it
# removed; "+0.1,0.3": Lester et al. train prompt tuning at 0.3.
GRIDS: dict[str, dict[str, tuple[float, ...]]] = {
    "ptuning": {"window": (1e-2, 3e-2), "+0.1": (1e-2, 3e-2, 1e-1)},
    "prompt": {
        "window": (3e-3, 1e-2, 3e-2),
        "+0.1": (3e-3, 1e-2, 3e-2, 1e-1),
        "+0.1,0.3": (3e-3, 1e-2, 3e-2, 1e-1, 3e-1),
    },
}
# rates trained in full by step ``rates``: the default, and what the window removed
RATES = {"ptuning": (1e-2, 3e-2, 1e-1), "prompt": (3e-3, 3e-2, 1e-1, 3e-1)}
SETS = ["sst2", "sms_spam", "emotion", "rte", "wnut17", "ud_ewt_pos", "stsb"]
BEGIN, END = "<!-- prompts: bench/lr_prompts.py -->", "<!-- /prompts -->"


def data_of(dataset: str, folder: Path) -> tuple[Path, Path, str]:
    """Training rows, evaluation file and the metric a set is judged on (the benches' own)."""
    if dataset in DATASETS:
        split, metric = DATASETS[dataset]
        return train_subset(dataset, ROWS, folder), SHARED / dataset / f"{split}.csv", metric
    if dataset in ("wnut17", "ud_ewt_pos"):
        split = "test" if dataset == "wnut17" else "dev"
        return rows_file(folder, dataset, "train", ROWS), SHARED / dataset / f"{split}.jsonl", "score"
    import pandas as pd  # stsb, as bench/scores.py samples it

    train = folder / f"{dataset}-train-{ROWS}.csv"
    if not train.exists():
        frame = pd.read_csv(SHARED / dataset / "train.csv")
        frame.sample(n=min(ROWS, len(frame)), random_state=0).to_csv(train, index=False)
    return train, SHARED / dataset / "dev.csv", "score"


@contextlib.contextmanager
def grid(method: str, rates: tuple[float, ...]) -> Any:
    """The method searches ``rates`` in this process while the block runs."""
    from backend.methods import registry

    spec = registry.get(method)
    registry._REGISTRY[method] = dataclasses.replace(spec, lr_candidates=rates)
    try:
        yield
    finally:
        registry._REGISTRY[method] = spec


def search(dataset: str, method: str, seed: int, name: str, folder: Path) -> dict[str, Any]:
    from backend.training.config import TrainConfig

    train, evaluation, _ = data_of(dataset, folder)
    cfg = TrainConfig(data=str(train), eval_data=str(evaluation), method=method, seed=seed)
    started = time.perf_counter()
    with grid(method, GRIDS[method][name]):
        lines = search_lines(cfg)
    choice = next(line for line in lines if line.startswith("learning rate "))
    return {
        "chosen": float(choice.split()[2]),
        "log": choice,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def full(
    dataset: str, method: str, seed: int, name: str, folder: Path, lr: float | str = "auto"
) -> dict[str, Any]:
    from backend.run import run_training
    from backend.training.config import TrainConfig

    train, evaluation, metric = data_of(dataset, folder)
    cfg = TrainConfig(data=str(train), eval_data=str(evaluation), method=method, seed=seed, lr=lr)
    started = time.perf_counter()
    with grid(method, GRIDS[method][name]), tempfile.TemporaryDirectory() as out:
        s = run_training(cfg, Path(out), feature_cache_dir=folder / "features")
    ci = s.get("macro_f1_ci") if metric == "macro_f1" else s.get("score_ci")
    return {
        "score": s.get(metric), "ci": ci, "metric": metric if metric != "score" else s.get("primary_metric"),
        "lr": s.get("lr"), "epochs_run": s.get("epochs_run"), "warning": s.get("lr_choice_warning"),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip


def append_run(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["stage"], r["dataset"], r["method"], r["seed"], r.get("grid"), r.get("lr_chosen"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", default="ptuning,prompt")
    p.add_argument("--datasets", default=",".join(SETS))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--stage", default="both", choices=("search", "full", "both", "rates"))
    p.add_argument(
        "--grid", default=None, help="stage full: only the rates this grid chose (e.g. '+0.1', the product's)"
    )
    p.add_argument("--report", action="store_true", help="only rewrite the report from the runs file")
    args = p.parse_args()
    if not args.report:
        run(args)
    write_report()
    return 0


def run(args: argparse.Namespace) -> None:
    sets = [d for d in args.datasets.split(",") if (SHARED / d).is_dir()]
    seeds = [int(s) for s in args.seeds.split(",")]
    methods = args.methods.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.stage == "rates":
            for method in methods:
                for seed in seeds:
                    for dataset in sets:
                        run_rates(dataset, method, seed, folder)
            return
        for stage in ("search", "full"):
            if args.stage not in (stage, "both"):
                continue
            for seed in seeds:
                for dataset in sets:
                    for method in methods:
                        run_cell(stage, dataset, method, seed, folder, args.grid)


def run_cell(stage: str, dataset: str, method: str, seed: int, folder: Path, only: str | None = None) -> None:
    done = {key(r) for r in read_runs(RUNS)}
    base = {"stage": stage, "dataset": dataset, "method": method, "seed": seed, "commit": COMMIT}
    if stage == "search":
        for name in GRIDS[method]:
            row = {**base, "grid": name}
            if key(row) not in done:
                append_run(RUNS, {**row, **search(dataset, method, seed, name, folder)})
                print(f"search {dataset} {method} seed {seed} {name}", flush=True)
        return
    # one full run per distinct choice, under the first grid that chose it
    chosen: dict[float, str] = {}
    by: dict[float, set[str]] = {}  # every grid that chose the rate
    for r in read_runs(RUNS):
        if r["stage"] == "search" and (r["dataset"], r["method"], r["seed"]) == (dataset, method, seed):
            chosen.setdefault(r["chosen"], r["grid"])
            by.setdefault(r["chosen"], set()).add(r["grid"])
    for lr, name in sorted(chosen.items()):
        if only is not None and only not in by[lr]:
            continue
        row = {**base, "grid": name, "lr_chosen": lr}
        if key(row) not in done:
            append_run(RUNS, {**row, **full(dataset, method, seed, name, folder)})
            print(f"full {dataset} {method} seed {seed} lr {lr:g}", flush=True)


def run_rates(dataset: str, method: str, seed: int, folder: Path) -> None:
    done = {key(r) for r in read_runs(RUNS)}
    for lr in RATES[method]:
        row = {"stage": "rate", "dataset": dataset, "method": method, "seed": seed, "lr_chosen": lr}
        if key(row) not in done:
            append_run(RUNS, {**row, "commit": COMMIT, **full(dataset, method, seed, "window", folder, lr)})
            print(f"rate {dataset} {method} seed {seed} lr {lr:g}", flush=True)


def write_report() -> None:
    rows = read_runs(RUNS)
    text = REPORT.read_text()
    section = "\n".join([BEGIN, *report_lines(rows), END])
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    REPORT.write_text(text)
    print(section)


def report_lines(rows: list[dict[str, Any]]) -> list[str]:
    chosen = {
        (r["dataset"], r["method"], r["seed"], r["grid"]): r["chosen"] for r in rows if r["stage"] == "search"
    }
    rated = {(r["dataset"], r["method"], r["seed"], r["lr_chosen"]): r for r in rows if r["stage"] == "rate"}
    autos = {(r["dataset"], r["method"], r["seed"], r["lr_chosen"]): r for r in rows if r["stage"] == "full"}
    rates = sorted({lr for lrs in RATES.values() for lr in lrs})
    out = [
        "## The shallow prompts' window (issue 51, `python bench/lr_prompts.py`)",
        "",
        "1,000 training rows of each shared set, each method at its defaults but for the learning rate. "
        "*search chose*: the rate the search picked under each grid (`GRIDS`: what issue 36's window "
        "left, then with 0.1, then for prompt tuning also 0.3), stopped once it had chosen; '→': the "
        "run at defaults after that search, in full (stage `full`), where it ran. *at r*: the "
        "run in full at the fixed rate r (epochs auto, no search), its primary metric (macro-F1 for "
        "sms_spam) with the 95% interval. A seeded search that chooses the same rate under two grids "
        "trains the same run after it, so the grids differ only where their choices do. '–': not run.",
        "",
        f"| dataset | method | seed | search chose ({' / '.join(GRIDS['prompt'])}) | "
        + " | ".join(f"at {lr:g}" for lr in rates) + " |",
        "|---|---|---:|---|" + "---:|" * len(rates),
    ]  # fmt: skip
    cells = sorted({(d, m, s) for (d, m, s, _) in [*chosen, *rated, *autos]},
                   key=lambda c: (SETS.index(c[0]) if c[0] in SETS else 99, c[1], c[2]))  # fmt: skip
    for dataset, method, seed in cells:
        picks = [chosen.get((dataset, method, seed, g)) for g in GRIDS[method]]
        picked = " / ".join(
            "–" if p is None else chosen_cell(p, autos.get((dataset, method, seed, p))) for p in picks
        )
        scores = [cell(rated.get((dataset, method, seed, lr))) for lr in rates]
        out.append(f"| {dataset} | {method} | {seed} | {picked} | " + " | ".join(scores) + " |")
    return out


def chosen_cell(lr: float, auto: dict[str, Any] | None) -> str:
    """The rate a search chose, with what the run after it (``full``) reached where it ran. The
    run searches again, seeded: where its search chose another rate (emotion P-tuning seed 2:
    0.1 in the search stage at 0ece991, 0.03 in the run at b6f645c, a thread count apart), the
    rate the run trained with is named."""
    if auto is None:
        return f"{lr:g}"
    trained = auto.get("lr")
    other = f" (its run's search: {trained:g})" if trained is not None and trained != lr else ""
    return f"{lr:g} → {cell(auto)}{other}"


def cell(r: dict[str, Any] | None) -> str:
    if not r or r.get("score") is None:
        return "–"
    ci = r.get("ci")
    return f"{r['score']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{r['score']:.3f}"


if __name__ == "__main__":
    raise SystemExit(main())
