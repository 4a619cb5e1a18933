"""Sweeps end to end with real workers: a grid through the CLI, a pruned Optuna search
through the API, bad sweeps refused whole, and Pareto flags that match the numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from backend.catalogue import DEFAULT_MODEL
from backend.errors import ConfigError
from backend.settings import Settings
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import JOB_TIMEOUT, quick_job, wait_for
from tests.jobs.test_cli import app

COSTS = ("trainable_params", "train_seconds", "adapter_bytes")


def dominated(trial: dict[str, Any], others: list[dict[str, Any]], costs: tuple[str, ...]) -> bool:
    """Brute force, written apart from the product's code: is some other trial at least as
    accurate and as cheap in every cost, and strictly better in one?"""
    for other in others:
        if other is trial or other["accuracy"] is None:
            continue
        at_least = other["accuracy"] >= trial["accuracy"] and all(other[c] <= trial[c] for c in costs)
        better = other["accuracy"] > trial["accuracy"] or any(other[c] < trial[c] for c in costs)
        if at_least and better:
            return True
    return False


def check_pareto(trials: list[dict[str, Any]]) -> None:
    for trial in trials:
        if trial["accuracy"] is None:
            assert trial["pareto"] is False
            continue
        assert trial["pareto"] == (not dominated(trial, trials, COSTS)), trial
        for cost in COSTS:
            assert trial["pareto_by"][cost] == (not dominated(trial, trials, (cost,))), (cost, trial)


@pytest.mark.engines("sqlite")  # a flow through the CLI: the engines' differences are tested elsewhere
def test_a_grid_through_the_cli_runs_every_point_and_reports_the_front(
    settings: Settings, data_dir: Path
) -> None:
    flags = ["--data", str(data_dir / "tiny.csv"), "--method", "lora", "--max-length", "16"]
    flags += ["--epochs", "2", "--lr", "3e-3", "--batch-size", "16", "--grid", "rank=1,4,16"]
    done = app(settings, "sweep", *flags, "--wait", timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    trials = result["trials"]
    assert [t["params"] for t in trials] == [{"rank": 1}, {"rank": 4}, {"rank": 16}]
    assert [t["status"] for t in trials] == ["succeeded"] * 3
    assert {
        "job_id",
        "method",
        "accuracy",
        "macro_f1",
        "trainable_params",
        "train_seconds",
        "adapter_bytes",
        "pareto",
    } <= set(trials[0])
    # More rank, more trainable parameters and a bigger adapter: the grid really varied it.
    assert trials[0]["trainable_params"] < trials[1]["trainable_params"] < trials[2]["trainable_params"]
    assert trials[0]["adapter_bytes"] < trials[2]["adapter_bytes"]
    best = max(trials, key=lambda t: (t["accuracy"], -t["trainable_params"]))
    assert result["best_job_id"] == best["job_id"]
    detail = Workbench(settings).get_sweep(result["sweep_id"])
    assert detail["status"] == "finished" and detail["kind"] == "grid"
    check_pareto(detail["trials"])
    assert "trial #" in done.stderr  # one line per finished trial, with its task's primary metric
    assert re.search(r": succeeded accuracy [01]\.\d{4}\n", done.stderr), done.stderr


def test_a_search_prunes_a_hopeless_trial(
    bench: Workbench, data_dir: Path, supervisors: Callable[..., Supervisor]
) -> None:
    """The task is built for pruning: learning rates from 1e-7 (learns nothing in three
    epochs) to 3e-2 (learns the toy task in one), and the median pruner after one trial. On the
    real default model: the tiny random one learns the toy task at no rate in three epochs."""
    base = quick_job(data_dir / "tiny.csv", model=DEFAULT_MODEL, epochs=3, early_stopping_patience=0)
    sweep_id = bench.submit_sweep(base, trials=4, search=["lr=1e-7:3e-2"], pruner="median", seed=3)
    supervisors(max_concurrent=1)

    def ended() -> dict[str, Any] | None:
        detail = bench.get_sweep(sweep_id)
        return detail if detail["status"] != "running" else None

    detail = wait_for(ended, 4 * JOB_TIMEOUT, f"sweep {sweep_id} to end")
    statuses = [t["status"] for t in detail["trials"]]
    assert len(statuses) == 4 and set(statuses) <= {"succeeded", "pruned"}, detail["trials"]
    assert "pruned" in statuses and "succeeded" in statuses
    pruned = [t for t in detail["trials"] if t["status"] == "pruned"]
    job = bench.get_job(pruned[0]["job_id"], log_tail=20)
    assert "pruned after epoch" in (job["error"] or "")
    assert len(job["series"]["eval_accuracy"]) < 3  # it stopped before its last epoch
    scored = [t for t in detail["trials"] if t["accuracy"] is not None]
    assert detail["best_job_id"] == max(scored, key=lambda t: t["accuracy"])["job_id"]
    assert detail["pruned"] == len(pruned)
    check_pareto(detail["trials"])


def test_a_bad_sweep_is_refused_whole(bench: Workbench, data_dir: Path) -> None:
    base = quick_job(data_dir / "tiny.csv")
    with pytest.raises(ConfigError, match="LoRA rank must be between 1 and 256, got 0"):
        bench.submit_sweep(base, grid=["rank=8,0"])
    with pytest.raises(ConfigError, match="exactly one of"):
        bench.submit_sweep(base, grid=["rank=8"], trials=3)
    with pytest.raises(ConfigError, match="has no setting 'bottleneck'"):
        bench.submit_sweep(base, trials=3, search=["bottleneck"])
    assert bench.list_jobs() == [] and bench.list_sweeps() == []  # nothing half-written
