"""Regression runs as jobs (issue 38): real workers train them, the job row carries the task,
its primary metric and score, Compare pairs two of them by Spearman, refuses to pair runs of
different tasks, and the Runs page's header names the metric."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from backend.errors import ConfigError
from jobs.schema import Job
from jobs.supervisor import Supervisor
from service.api import Workbench
from service.cli_jobs import show_lines
from service.svg_charts import compare_scatter_svg
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import quick_job, wait_for, wait_status
from tests.unit.test_regression import score_rows, write
from ui.tables import compare_table, predictions_table
from ui.tabs.errors import evaluation_note
from ui.tabs.runs import summary
from ui.tabs.sweeps import trials_table

# A task's flow through the jobs, not the engine: one engine (tests/jobs/conftest.py); the
# sweeps' Optuna storage runs on both in test_sweeps.py.
pytestmark = pytest.mark.engines("sqlite")


def test_regression_jobs_report_their_task_and_pair_by_spearman(
    bench: Workbench, tmp_path: Path, supervisors: Callable[..., Supervisor]
) -> None:
    data = write(tmp_path / "scores.csv", score_rows(120, 5))
    evals = write(tmp_path / "scores-eval.csv", score_rows(50, 6))
    jobs = [
        bench.submit(quick_job(data, eval_data=str(evals), epochs=2)),
        bench.submit(quick_job(data, eval_data=str(evals), method="probe", epochs=2)),
        bench.submit(quick_job(write_csv(tmp_path / "labels.csv", sentiment_rows(60)))),
    ]
    supervisors()
    lora, probe, labels = (wait_status(bench, j) for j in jobs)
    assert [j["status"] for j in (lora, probe, labels)] == ["succeeded"] * 3, [lora["error"], probe["error"]]
    for job in (lora, probe):
        assert (job["task"], job["primary_metric"]) == ("regression", "spearman")
        assert job["accuracy"] is None and job["score"] == pytest.approx(job["metrics"]["spearman"])
        assert "spearman" in job["headline"] and "rmse" in job["headline"]
        text = summary(job)
        assert f"spearman {job['score']:.3f}" in text and "rmse" in text and "accuracy" not in text
    assert (labels["task"], labels["primary_metric"]) == ("classification", "accuracy")
    assert labels["score"] == labels["accuracy"]
    listed = {row["id"]: row for row in bench.list_jobs()}
    assert listed[jobs[0]]["task"] == "regression" and listed[jobs[2]]["task"] == "classification"

    result = bench.significance(jobs[:2])
    assert result["metric"] == "spearman" and {r["run"] for r in result["runs"]} == {"job 1", "job 2"}
    by_run = {r["run"]: r for r in result["runs"]}
    assert by_run["job 1"]["score"] == pytest.approx(lora["score"])
    (pair,) = result["pairs"]
    assert pair["test"] == "paired permutation" and 0.0 <= pair["p_value"] <= 1.0
    with pytest.raises(ConfigError, match="runs of different tasks cannot be paired"):
        bench.significance([jobs[0], jobs[2]])
    shown = bench.compare(jobs)
    assert shown["significance"] is None and "different tasks" in shown["significance_note"]
    residuals = bench.predictions(jobs[0])  # error analysis: the largest errors first
    sizes = [abs(r["error"]) for r in residuals["rows"]]
    assert residuals["kind"] == "score" and residuals["total"] == 50 and sizes == sorted(sizes, reverse=True)
    off = bench.predictions(jobs[0], wrong_only=True)  # off by more than the run's RMSE
    rmse = lora["metrics"]["rmse"]
    assert 0 < off["matching"] < 50 and all(abs(r["error"]) > rmse - 1e-6 for r in off["rows"])
    with pytest.raises(ConfigError, match="no confidence to calibrate"):
        bench.calibration(jobs[0])
    assert bench.predictions(jobs[2])["kind"] == "label"
    scatter = bench.prediction_scatter(jobs[0])  # the run page's predicted against true
    assert scatter.count('class="wb-row"') == 50 and bench.prediction_scatter(jobs[2]) == ""
    (scored, labelled) = bench.predict([jobs[0], jobs[2]], ["great superb fine"])  # Try it
    (number,), (label,) = scored["predictions"], labelled["predictions"]
    assert number["probability"] is None and number["label"] == f"{number['score']:.4g}"
    assert label["score"] is None and label["label"] in ("pos", "neg") and 0.0 <= label["probability"] <= 1.0
    assert (scored["view"], labelled["view"]) == ("score", "label")  # each drawn by its kind's renderer
    drawn = predictions_table([scored, labelled])
    assert drawn["Prediction"].tolist() == [number["label"], label["label"]]
    assert drawn["Confidence"].tolist() == ["–", f"{100 * label['probability']:.1f}%"]
    other = bench.register_dataset(write(tmp_path / "other.csv", score_rows(40, 10)))
    evaluated = bench.evaluate(jobs[0], other["id"])  # another file of scores: its own metrics
    assert evaluated["rows"] == 40 and -1.0 <= evaluated["spearman"] <= 1.0 and evaluated["rmse"] > 0
    # Error analysis's note on it: the task's metrics (it formatted an accuracy a score run lacks)
    note = evaluation_note(jobs[0], evaluated, bench.get_job(jobs[0])["headline"])
    assert f"spearman {evaluated['spearman']:.4f}" in note and "accuracy" not in note
    compared = bench.compare(jobs[:2])
    chart = compare_scatter_svg(compared)  # Compare's chart: the score by size
    assert chart.count('class="wb-point') == 2 and "score against" in chart
    # issue 46: the reference row is the task's own baseline (it was only ever a majority class)
    (baseline,) = compared["baselines"]
    assert (baseline["task"], baseline["score"]) == ("regression", 0.0)
    assert baseline["label"] == "always the training mean"
    assert baseline["jobs"] == jobs[:2] and baseline["accuracy"] is None
    with bench.db.read() as session:  # a finished run's results in the columns every task has
        stored = session.get(Job, jobs[0])
        assert (stored.primary_metric, stored.baseline_name) == ("spearman", "always the training mean")
        assert set(stored.metrics) == {"spearman", "pearson", "rmse", "mae"} and len(stored.score_ci) == 2
        assert stored.baseline_score == 0.0 and stored.metrics["spearman"] == pytest.approx(lora["score"])
    lines = show_lines(bench.get_job(jobs[0]))  # `app.py show`: the task's own metrics
    head = "\n".join(lines[: lines.index("log (last lines):")])
    assert f"spearman: {lora['metrics']['spearman']:.4f}  pearson: " in head and "accuracy" not in head
    reference = compare_table(compared).iloc[-1]
    assert reference["Run"] == "Baseline (reference)" and reference["Spearman [95% CI]"] == "0.000 spearman"
    row = next(r for r in shown["table"] if r["id"] == jobs[0])
    assert (row["task"], row["score"]) == ("regression", pytest.approx(lora["score"]))


def test_a_regression_sweep_maximises_the_score(
    bench: Workbench, tmp_path: Path, supervisors: Callable[..., Supervisor]
) -> None:
    data = write(tmp_path / "scores.csv", score_rows(100, 9))
    sweep_id = bench.submit_sweep(quick_job(data), grid=["rank=2,4"])  # the default objective: accuracy
    supervisors()
    detail = wait_for(lambda: (d := bench.get_sweep(sweep_id))["status"] != "running" and d, 240, "the sweep")
    assert detail["objective"] == "score" and [t["status"] for t in detail["trials"]] == ["succeeded"] * 2
    best = max(detail["trials"], key=lambda t: t["score"])
    assert detail["best_job_id"] == best["job_id"] and all(t["accuracy"] is None for t in detail["trials"])
    assert {t["primary_metric"] for t in detail["trials"]} == {"spearman"}
    shown = trials_table(detail)  # the Sweeps tab: each trial's score, named (it showed "–")
    assert f"{best['score']:.3f} spearman" in shown
