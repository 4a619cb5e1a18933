"""``train`` stores its score's interval and its predictions; ``compare`` pairs two runs on the
same rows and refuses runs on different ones (issue 37), through the real CLI on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app import main as cli_main
from backend.significance import BETTER, WITHIN_NOISE, WORSE
from tests.conftest import sentiment_rows, write_csv
from tests.tiny_models import TINY_BERT


def train(tmp: Path, name: str, method: str, eval_data: Path, capsys: Any) -> dict[str, Any]:
    data = write_csv(tmp / "train.csv", sentiment_rows(120, seed=1))
    argv = ["train", "--data", str(data), "--eval-data", str(eval_data), "--model", TINY_BERT,
            "--method", method, "--epochs", "2", "--lr", "default", "--max-length", "16",
            "--out", str(tmp / name)]  # fmt: skip
    assert cli_main(argv) in (0, None)
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_intervals_are_stored_and_compare_pairs_runs_on_the_same_rows(tmp_path: Path, capsys: Any) -> None:
    evals = write_csv(tmp_path / "eval.csv", sentiment_rows(80, seed=2))
    probe = train(tmp_path, "probe", "probe", evals, capsys)
    lora = train(tmp_path, "lora", "lora", evals, capsys)
    for run in (probe, lora):
        low, high = run["score_ci"]
        assert 0.0 <= low <= run["score"] <= high <= 1.0 and high > low
        assert run["score"] == pytest.approx(run["accuracy"])
        assert (tmp_path / "probe" / "eval_predictions.parquet").is_file()
    assert probe["eval_rows_digest"] == lora["eval_rows_digest"]

    assert cli_main(["compare", str(tmp_path / "probe"), str(tmp_path / "lora")]) in (0, None)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    by_run = {r["run"]: r for r in result["runs"]}
    assert by_run[str(tmp_path / "probe")]["score_ci"] == pytest.approx(probe["score_ci"])
    assert by_run[str(tmp_path / "lora")]["score"] == pytest.approx(lora["score"])
    (pair,) = result["pairs"]
    assert pair["b"] == result["best"] and pair["a"] != pair["b"]
    assert pair["delta"] == pytest.approx(by_run[pair["a"]]["score"] - by_run[pair["b"]]["score"])
    assert pair["verdict"] in (BETTER, WITHIN_NOISE, WORSE) and 0.0 <= pair["p_value"] <= 1.0
    assert pair["delta_ci"][0] <= pair["delta"] <= pair["delta_ci"][1]

    other = write_csv(tmp_path / "other.csv", sentiment_rows(80, seed=3))
    train(tmp_path, "elsewhere", "probe", other, capsys)
    code = cli_main(["compare", str(tmp_path / "probe"), str(tmp_path / "elsewhere")])
    err = capsys.readouterr()
    assert code == 2 and err.out == ""
    lines = err.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "different rows" in lines[0]
