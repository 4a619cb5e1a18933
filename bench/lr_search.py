"""Benchmark: what the learning-rate search decides, cell by cell, without the runs after it.

    .venv/bin/python bench/lr_search.py [--rows 1000] [--only lora,ia3] [--datasets emotion]

For every method on the four shared datasets (the same training rows, settings and seed as
bench/tasks.py's "auto" column), the real run starts, its search runs, and the run is stopped
as the search reports its choice. What the search logged (the finalists' per-row held-out
loss gap and its standard error, the choice, its time) goes to bench/lr_search_runs.jsonl and
bench/LR_SEARCH.md. The search is seeded, so a full run with the same code chooses the same.
A search costs ~12% of a run: this sees every cell's decision in ~1/8 of bench/tasks.py's time,
and tells which cells a change to the search moves (those then get a full run there).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from backend.training.lr_search import SEARCH_SHARE
from bench.tasks import COMMIT, DATASETS, METHODS, SHARED, train_subset

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "bench" / "lr_search_runs.jsonl"
REPORT = ROOT / "bench" / "LR_SEARCH.md"
# the search's last word on its default against the best (backend.training.lr_search_noise)
BEATS = re.compile(r"search: (\S+) beats the default (\S+) by ([-+]?[\d.]+) ± ([\d.]+)")
KEPT = re.compile(
    r"search: the default (\S+) is within the noise of (\S+) \(held-out loss ([-+]?[\d.]+) ± ([\d.]+)"
)


CANDIDATES = re.compile(r"held-out loss per candidate: ([^;]*)")


def candidates_in(log: str) -> str:
    """The searched rates, from the search's log line ("0.0003,0.001,0.003")."""
    found = CANDIDATES.search(log)
    return ",".join(part.split(":")[0].strip() for part in found.group(1).split(", ")) if found else "?"


class SearchDone(Exception):
    """Raised from the log callback once the search has chosen: the run stops there."""


def search_lines(cfg: Any) -> list[str]:
    """What a run with ``cfg`` logs until its search has chosen (the run stops there)."""
    from backend.run import run_training
    from backend.training.callbacks import Callback

    lines: list[str] = []

    class StopAfterSearch(Callback):
        def on_log(self, message: str) -> None:
            lines.append(message)
            if message.startswith("learning rate ") and "held-out loss per candidate" in message:
                raise SearchDone

    with tempfile.TemporaryDirectory() as out, contextlib.suppress(SearchDone):
        run_training(cfg, Path(out), StopAfterSearch())
    return lines


def search_one(dataset: str, method: str, train: Path, **settings: Any) -> dict[str, Any]:
    """``settings``: further TrainConfig settings (bench/lr_trigger.py: seed, max length)."""
    from backend.training.config import TrainConfig

    split, _ = DATASETS[dataset]
    eval_data = str(SHARED / dataset / f"{split}.csv")
    cfg = TrainConfig(data=str(train), eval_data=eval_data, method=method, **{"seed": 0, **settings})
    started = time.perf_counter()
    lines = search_lines(cfg)
    choice = next(line for line in lines if line.startswith("learning rate "))
    finals = [finalist(line) for line in lines if BEATS.search(line) or KEPT.search(line)]
    return {
        "dataset": dataset,
        "method": method,
        "chosen": float(choice.split()[2]),
        "tie": any(f["kept_default"] for f in finals),
        "finalists": finals,
        "log": choice,
        "schedule": next((line for line in lines if "candidates (" in line), ""),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "commit": COMMIT,
    }


def finalist(line: str) -> dict[str, Any]:
    """The last round's verdict on the default against the best: the gap and its standard error."""
    if m := BEATS.search(line):
        best, default, gap, se = m.groups()
        kept = False
    else:
        default, best, gap, se = KEPT.search(line).groups()  # type: ignore[union-attr]
        kept = True
    return {
        "default": float(default),
        "best": float(best),
        "gap": float(gap),
        "se": float(se),
        "kept_default": kept,
    }


def earlier_choices(rows: list[dict[str, Any]]) -> dict[int, str]:
    """For each row, the newest earlier choice of its cell (dataset, method, budget) under
    other candidates: "0.01 of 0.0003,0.001,0.003,0.01"."""
    history: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        history.setdefault((r["dataset"], r["method"], r["share"]), []).append(r)
    found: dict[int, str] = {}
    for cell in history.values():
        newest = cell[-1]
        other = [r for r in cell if candidates_in(r["log"]) != candidates_in(newest["log"])]
        if other:
            found[id(newest)] = f"{other[-1]['chosen']:g} of {candidates_in(other[-1]['log'])}"
    return found


def render(rows: list[dict[str, Any]], n: int, history: list[dict[str, Any]]) -> str:
    before = earlier_choices(history)
    lines = [
        "# What the learning-rate search chooses",
        "",
        f'`python bench/lr_search.py --rows {n}`: the search of each "auto" run of bench/tasks.py '
        "(seed 0), stopped once it has chosen. *finalists*: the last round's comparison of the method's "
        "default (the candidate nearest it) with the best, as the mean per-row held-out loss gap ± its "
        "paired standard error; within two standard errors the default is kept (*tie*). Rows from "
        "6287ee7 compared the best with a smaller finalist instead (a smaller rate won a tie then).",
        "",
        "*before*: the newest choice of the same cell under another set of candidates (issue 36 "
        "cut each method's candidates to at most half a decade above its default).",
        "",
        "| dataset | method | budget | candidates | chosen | before | finalists | tie | wall s | code |",
        "|---|---|---:|---|---:|---|---|---|---:|---|",
    ]
    for r in rows:
        finals = "; ".join(
            f"default {f['default']:g} vs best {f['best']:g}: {f['gap']:+.3f} ± {f['se']:.3f}"
            for f in r["finalists"]
            if "default" in f
        )
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['share']:.0%} | {candidates_in(r['log'])} | "
            f"{r['chosen']:g} | {before.get(id(r), '–')} | {finals or '–'} | "
            f"{'yes' if r['tie'] else ''} | {r['wall_seconds']} | {r['commit']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--only", help="comma-separated method keys")
    p.add_argument("--datasets", help="comma-separated dataset folders")
    p.add_argument(
        "--share",
        type=float,
        help="try another search budget (share of the planned run; the default is the product's)",
    )
    args = p.parse_args()
    if args.share:  # a study of the budget: the product's constant, replaced for this process only
        import backend.training.lr_search as lr_search
        import backend.training.lr_search_model as lr_search_model

        lr_search.SEARCH_SHARE = lr_search_model.SEARCH_SHARE = args.share
    if not SHARED.is_dir():
        print(f"no shared data at {SHARED}", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-lr-"))
    for dataset in args.datasets.split(",") if args.datasets else list(DATASETS):
        for method in args.only.split(",") if args.only else METHODS:
            row = search_one(dataset, method, train_subset(dataset, args.rows, folder))
            row["share"] = args.share or SEARCH_SHARE
            print(json.dumps(row), flush=True)
            with RUNS.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    for r in rows:
        r.setdefault("share", SEARCH_SHARE)  # rows from before --share existed
    newest = {(r["dataset"], r["method"], r["share"]): r for r in rows}
    REPORT.write_text(render(list(newest.values()), args.rows, rows))
    print(REPORT.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
