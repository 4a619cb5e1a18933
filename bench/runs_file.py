"""The loop the task benchmarks share: run what their runs file lacks, one JSON line per run,
and rewrite the report after each (a stopped benchmark resumes where it was)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Bench:
    """What a task benchmark's command line runs: its data folder, runs file, report and the
    methods (or variants) it runs by default."""

    doc: str  # the script's docstring: its first line is the --help description
    data: Path
    runs: Path
    report: Path
    render: Callable[[], str]
    methods: list[str]
    rows: int
    prefix: str  # of the temporary folder its runs write to


def bench_main(bench: Bench, run_one: Callable[[str, int, int, Path], dict[str, Any]]) -> int:
    """``--only``, ``--seeds``, ``--rows`` and ``--report``; skips, saying so, without the data;
    ``run_one(method, seed, rows, folder)`` for each pending run."""
    import argparse
    import sys
    import tempfile

    p = argparse.ArgumentParser(description=bench.doc.splitlines()[0])
    p.add_argument("--only", help="comma-separated method keys (or the variants the report names)")
    p.add_argument("--seeds", default="0")
    p.add_argument("--rows", type=int, default=bench.rows)
    p.add_argument("--report", action="store_true", help=f"only rewrite bench/{bench.report.name}")
    args = p.parse_args()
    if not bench.data.is_dir():
        print(f"skipped: {bench.data} is absent", file=sys.stderr)
        return 0
    if args.report:
        bench.report.write_text(bench.render())
        return 0
    folder = Path(tempfile.mkdtemp(prefix=bench.prefix))
    methods = args.only.split(",") if args.only else bench.methods
    wanted = [(m, seed) for seed in map(int, args.seeds.split(",")) for m in methods]
    run_pending(
        bench.runs,
        bench.report,
        bench.render,
        wanted,
        args.rows,
        lambda m, seed: run_one(m, seed, args.rows, folder),
    )
    return 0
