"""The regression task (issue 38): a number per text or pair. Its metrics against scipy's, its
baseline, how "auto" recognises it, its bad input, and runs through the real CLI on a tiny model
(a LoRA run and a probe): the summary's keys, the interval, the predictions, ``predict`` and the
reloaded head."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from app import main as cli_main
from backend.data.prepare import prepare
from backend.errors import DataError
from backend.tasks import registry
from backend.tasks.regression import spearman
from tests.tiny_models import TINY_BERT

WORDS = ["great", "fine", "dull", "awful", "superb", "weak"]
GOOD = {"great": 2.0, "superb": 2.5, "fine": 1.0}


def score_rows(n: int, seed: int) -> list[tuple[str, str]]:
    """Texts whose score is how good their words are, plus a fraction: many distinct numbers."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(3)]
        value = sum(GOOD.get(w, 0.0) for w in words) + round(rng.random(), 2)
        rows.append((" ".join(words), f"{value:.2f}"))
    return rows


def write(path: Path, rows: list[tuple[str, str]], header: tuple[str, str] = ("text", "score")) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_metrics_are_scipys_and_the_baseline_is_the_training_mean() -> None:
    task = registry.get("regression")
    rng = np.random.default_rng(0)
    true = rng.normal(2.5, 1.0, 200)
    predicted = true + rng.normal(0, 0.7, 200)
    m = task.metrics(true, predicted[:, None], ["score"])
    assert m["spearman"] == pytest.approx(stats.spearmanr(true, predicted).statistic)
    assert m["pearson"] == pytest.approx(stats.pearsonr(true, predicted).statistic)
    assert m["rmse"] == pytest.approx(float(np.sqrt(np.mean((predicted - true) ** 2))))
    assert m["mae"] == pytest.approx(float(np.mean(np.abs(predicted - true))))
    assert m["score"] == m["spearman"] and m["eval_loss"] == pytest.approx(m["rmse"] ** 2)
    train = [1.0, 2.0, 3.0, 6.0]
    base = task.baseline(train, list(true), ["score"])
    assert base["mean"] == 3.0 and base["pearson"] == base["spearman"] == base["score"] == 0.0
    assert base["rmse"] == pytest.approx(float(np.sqrt(np.mean((true - 3.0) ** 2))))


def test_the_bootstrap_spearman_is_scipys_on_every_resample() -> None:
    rng = np.random.default_rng(1)
    true, predicted = rng.normal(size=(5, 40)), rng.normal(size=(5, 40))
    predicted[2] = true[2]  # a perfect row, and ties in another
    true[3, :10] = 0.0
    want = [stats.spearmanr(t, p).statistic for t, p in zip(true, predicted, strict=True)]
    assert spearman(true, predicted, axis=-1) == pytest.approx(want)


def test_auto_recognises_scores_and_keeps_whole_numbers_as_classes(tmp_path: Path) -> None:
    scores = write(tmp_path / "scores.csv", score_rows(120, 0))
    data = prepare(scores)
    assert data.task.key == "regression" and data.label_names == ["score"]
    assert all(isinstance(v, float) for v in data.train.labels + data.eval.labels)
    # the split keeps the score range on both sides (stratified by quantile bin)
    assert min(data.eval.labels) < np.quantile(data.train.labels, 0.25) < max(data.eval.labels)
    stars = write(tmp_path / "stars.csv", [(f"review {i}", str(1 + i % 5)) for i in range(100)])
    assert prepare(stars).task.key == "classification"
    as_scores = prepare(stars, task="regression")
    assert as_scores.task.key == "regression" and sorted(set(as_scores.train.labels)) == [
        1.0,
        2.0,
        3.0,
        4.0,
        5.0,
    ]


def test_a_score_column_with_text_is_refused_with_a_count_or_dropped(tmp_path: Path) -> None:
    rows = score_rows(60, 2)
    rows[4], rows[9], rows[30] = ("x", "high"), ("y", "n/a?"), ("z", "low")
    path = write(tmp_path / "bad.csv", rows)
    with pytest.raises(DataError, match=r"bad\.csv: column 'score' holds 3 value\(s\) that are not numbers"):
        prepare(path, task="regression")
    with pytest.raises(DataError, match=r"rows 5, 10, 31"):
        prepare(path, task="regression")
    data = prepare(path, task="regression", drop_invalid=True)
    assert len(data.train) + len(data.eval) == 57
    assert any("dropped 3 row(s)" in w for w in data.warnings)


def train(tmp: Path, name: str, method: str, capsys: Any, *extra: str) -> dict[str, Any]:
    data = write(tmp / "train.csv", score_rows(160, 3))
    evals = write(tmp / "eval.csv", score_rows(60, 4))
    argv = ["train", "--data", str(data), "--eval-data", str(evals), "--model", TINY_BERT,
            "--method", method, "--epochs", "2", "--lr", "default", "--max-length", "16",
            "--out", str(tmp / name), *extra]  # fmt: skip
    assert cli_main(argv) in (0, None)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("method", ["lora", "probe"])
def test_a_regression_run_reports_predicts_and_reloads(tmp_path: Path, capsys: Any, method: str) -> None:
    from backend.artifacts.load import Predictor

    run = train(tmp_path, method, method, capsys)
    assert (run["task"], run["primary_metric"]) == ("regression", "spearman")
    assert run["score"] == pytest.approx(run["spearman"]) and "accuracy" not in run
    assert {"pearson", "rmse", "mae"} <= set(run) and run["rmse"] > 0
    low, high = run["score_ci"]
    assert -1.0 <= low <= run["score"] <= high <= 1.0
    evals = pd.read_csv(tmp_path / "eval.csv")
    truth = evals["score"].to_numpy(float)
    spread = float(np.sqrt(np.mean((truth - run["baseline"]["mean"]) ** 2)))
    assert run["baseline"]["rmse"] == pytest.approx(spread)
    frame = pd.read_parquet(tmp_path / method / "eval_predictions.parquet")
    assert frame["true"].tolist() == pytest.approx(truth.tolist())
    assert frame["error"].to_numpy() == pytest.approx((frame["predicted"] - frame["true"]).to_numpy())
    # the reloaded model is a one-output regression head and predicts what the run stored
    predictor = Predictor(tmp_path / method)
    reloaded = predictor.predict_proba(evals["text"].astype(str).tolist())
    assert reloaded.shape == (len(evals), 1)
    assert reloaded[:, 0] == pytest.approx(frame["predicted"].to_numpy(), abs=1e-4)
    if method == "lora":
        config = predictor.model.config
        assert config.num_labels == 1 and config.problem_type == "regression"
    out = tmp_path / "predicted.csv"
    argv = ["predict", "--artifact", str(tmp_path / method), "--data", str(tmp_path / "eval.csv")]
    assert cli_main([*argv, "--out", str(out)]) in (0, None)
    written = pd.read_csv(out)
    assert list(written.columns) == ["text", "score"]
    assert written["score"].to_numpy() == pytest.approx(reloaded[:, 0], abs=1e-5)


def test_the_data_tab_sees_scores_as_a_range_and_labels_as_classes(tmp_path: Path) -> None:
    from backend.data.stats import dataset_stats

    scores = dataset_stats(write(tmp_path / "scores.csv", score_rows(120, 8)))
    assert (scores["task"], scores["task_label"]) == ("regression", "Regression")
    assert scores["label_text"].startswith("a number per row (regression): ")
    assert len(scores["label_counts"]) == 10 and sum(scores["label_counts"].values()) == 120
    labels = dataset_stats(
        write(tmp_path / "labels.csv", [(f"t {i}", "ab"[i % 2]) for i in range(20)], ("text", "label"))
    )
    assert (labels["task"], labels["label_text"], labels["label_counts"]) == (
        "classification",
        "2 labels",
        {"a": 10, "b": 10},
    )
