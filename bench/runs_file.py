"""The loop the task benchmarks share: run what their runs file lacks, one JSON line per run,
and rewrite the report after each (a stopped benchmark resumes where it was)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def fmt(values: list[float]) -> str:
    """One value as it is; several as mean ± standard deviation."""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def read_runs(runs: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in runs.read_text().splitlines()] if runs.is_file() else []


def append_run(runs: Path, row: dict[str, Any]) -> None:
    """One finished run: printed, and appended to its runs file as one JSON line."""
    print(json.dumps(row), flush=True)
    with runs.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def run_pending(
    runs: Path,
    report: Path,
    render: Callable[[], str],
    wanted: Iterable[tuple[str, int]],
    rows: int,
    run_one: Callable[[str, int], dict[str, Any]],
) -> None:
    """``run_one(method, seed)`` for each wanted pair without a row of ``rows`` in ``runs``."""
    have = {(r["method"], r["seed"], r["rows"]) for r in read_runs(runs) if r.get("method")}
    for method, seed in wanted:
        if (method, seed, rows) in have:
            continue
        print(f"{method} seed {seed} ...", flush=True)
        append_run(runs, run_one(method, seed))
        report.write_text(render())
    report.write_text(render())
    print(report.read_text())
