"""Benchmark report (issue 36): the learning-rate search before and after its window.

    .venv/bin/python bench/lr_window.py

The window (``backend.methods.base.MAX_ABOVE_DEFAULT``, from commit WINDOW) cut each method's
candidates to at most half a decade above its default. Reads, runs nothing:
- bench/lr_search_runs.jsonl: each cell's choice (shared sets, 1,000 rows, seed 0) under the
  candidates before and after;
- bench/tasks_runs.jsonl: the "auto" runs in full (mean ± sd over the seeds run), the newest
  before WINDOW and those at or after it (``bench/tasks.py --cells ... --configs auto --redo``);
- bench/lr_trigger_runs.jsonl: the reproduced cases, each before and after, beside every
  candidate run in full.
Writes its section of bench/LR_SEARCH.md (between the ``window`` markers).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.lr_search import REPORT, RUNS, candidates_in  # noqa: E402
from bench.lr_trigger import BEFORE_WINDOW, grid  # noqa: E402
from bench.lr_trigger import RUNS as TRIGGER_RUNS  # noqa: E402
from bench.tasks import DATASETS  # noqa: E402

WINDOW = "0c59025"  # the commit that brought the window
CHANGED = ["probe", "full", "lora", "prompt", "ptuning", "ia3"]  # methods whose candidates it cut
BEGIN, END = "<!-- window: bench/lr_window.py -->", "<!-- /window -->"


def after_window() -> set[str]:
    """Short hashes of WINDOW and every commit after it."""
    out = subprocess.run(
        ["git", "rev-list", "--abbrev-commit", f"{WINDOW}^..HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    return {line.strip()[:7] for line in out.splitlines() if line.strip()}


def lines(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def spread(scores: list[float]) -> str:
    if not scores:
        return "–"
    if len(scores) == 1:
        return f"{scores[0]:.3f}"
    return f"{statistics.mean(scores):.3f} ± {statistics.stdev(scores):.3f} (n={len(scores)})"


def shared_rows(new: set[str]) -> list[str]:
    searched: dict[tuple[str, str], float] = {}  # the newest search-only choice, new candidates
    for r in lines(RUNS):
        if (
            r["method"] in CHANGED
            and r.get("share", 0.12) == 0.12
            and candidates_in(r["log"]) == grid(r["method"])
        ):
            searched[(r["dataset"], r["method"])] = r["chosen"]
    runs: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = {}
    for r in lines(ROOT / "bench" / "tasks_runs.jsonl"):  # chronological: the newest row wins
        if r["config"] == "auto" and r["method"] in CHANGED:
            when = "after" if r["commit"].split("+")[0][:7] in new else "before"
            runs.setdefault((r["dataset"], r["method"], when), {})[r["seed"]] = r
    out = []
    for dataset, (_, metric) in DATASETS.items():
        for method in CHANGED:
            before = runs.get((dataset, method, "before"), {})
            after = runs.get((dataset, method, "after"), {})
            seeds = sorted(after) or sorted(before)
            old_lr = f"{before[0]['lr']:g}" if 0 in before else "–"
            new_lr = f"{after[0]['lr']:g}" if 0 in after else f"{searched[(dataset, method)]:g} (search)"
            shares = [
                after[s]["lr_search_cost_steps"] / after[s]["total_steps"]
                for s in seeds
                if s in after and after[s].get("lr_search_cost_steps") and after[s].get("total_steps")
            ]
            share = f"{max(shares):.0%}" if shares else "–"
            out.append(
                f"| {dataset} | {method} | {old_lr} | {new_lr} | "
                f"{spread([before[s][metric] for s in seeds if s in before])} | "
                f"{spread([after[s][metric] for s in seeds if s in after])} | {share} |"
            )
    return out


def trigger_rows() -> list[str]:
    cases: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in lines(TRIGGER_RUNS):
        key = (r["dataset"], r["method"], r["rows"], r["max_length"], r["seed"])
        cases.setdefault(key, {})[
            "before" if r.get("candidates", BEFORE_WINDOW) == BEFORE_WINDOW else "after"
        ] = r
    out = []
    for key, both in cases.items():
        before, after = both.get("before"), both.get("after")
        if not before or not after or before["chosen"] == after["chosen"]:
            continue  # the window changed nothing here
        full = {**(before.get("full") or {}), **(after.get("full") or {})}
        best_lr, best = max(
            ((lr, v["score"]) for lr, v in full.items()), key=lambda x: x[1], default=("–", None)
        )
        score = (after.get("auto") or {}).get("score")
        gap = f"{best - score:+.3f}" if best is not None and score is not None else "–"
        old = (before.get("auto") or {}).get("score")
        out.append(
            f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {before['chosen']:g} | "
            f"{fmt(old)} | {after['chosen']:g} | "
            f"{fmt(score)} | {best_lr}: {fmt(best)} | {gap} |"
        )
    return out


def fmt(score: float | None) -> str:
    return "–" if score is None else f"{score:.3f}"


def section() -> str:
    new = after_window()
    return "\n".join(
        [
            BEGIN,
            "## Before and after the window (issue 36, `python bench/lr_window.py`)",
            "",
            "The search now tries no rate above half a decade over the method's default "
            "(`backend.methods.base.MAX_ABOVE_DEFAULT`). Shared sets, 1,000 training rows (bench/tasks.py). "
            "*chosen*: the learning rate of the seed-0 run the newest before the window, and after it (of "
            "its run in full, else of its search alone, bench/lr_search.py). *auto run*: the score in full "
            "(accuracy; macro-F1 for sms_spam), mean ± sd over the seeds run after the window, beside the "
            "same seeds before it; '–' after: not rerun. *search share*: the search's cost in run steps (as "
            "its budget counts it) over the steps the run trained, the largest over the seeds (the issue's "
            "ceiling: 15%; not the time ratio: these runs shared the CPU with other benches).",
            "",
            "| dataset | method | chosen before | chosen after | auto run before | auto run after "
            "| search share after |",
            "|---|---|---:|---:|---:|---:|---:|",
            *shared_rows(new),
            "",
            "Prefix tuning (candidates 1e-3 to 3e-2, default 3e-2) and the bottleneck adapter (1e-4 to 3e-3, "
            "default 1e-3) had no candidate above the window: their searches and runs are the same as "
            "before (bench/TASKS.md).",
            "",
            "The reproduced cases (`bench/lr_trigger.py`; bench/LR_TRIGGER.md): where the old search chose "
            "a rate above the candidate nearest the default, the search under the new candidates and its "
            "run in full, beside the best candidate run in full at a fixed rate (any grid).",
            "",
            "| dataset | method | rows | max length | seed | chosen before | auto before | chosen after "
            "| auto after | best candidate in full | best − auto after |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
            *trigger_rows(),
            END,
        ]
    )


def main() -> int:
    text = section()
    old = REPORT.read_text() if REPORT.exists() else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        old = head + rest.split(END, 1)[1].lstrip("\n")
    REPORT.write_text(old.rstrip("\n") + "\n\n" + text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
