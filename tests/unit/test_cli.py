"""The command-line contract: JSON last line, exit codes, one-line errors, predict, export."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

REQUIRED = {
    "method",
    "accuracy",
    "macro_f1",
    "eval_loss",
    "trainable_params",
    "total_params",
    "train_seconds",
    "peak_rss_mb",
    "artifact_dir",
    "adapter_bytes",
    "quant",
}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "app.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def trained(tiny_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("cli") / "run"
    proc = cli(
        "train",
        "--data",
        str(tiny_csv),
        "--method",
        "lora",
        "--rank",
        "4",
        "--epochs",
        "1",
        "--max-length",
        "32",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out, json.loads(proc.stdout.strip().splitlines()[-1])


def test_train_prints_summary_json_last(trained: tuple[Path, dict]) -> None:
    out, summary = trained
    assert summary.keys() >= REQUIRED
    assert summary["method"] == "lora" and summary["artifact_dir"] == str(out.resolve())
    assert summary["trainable_params"] == 6 * 2 * (2 * 4 * 384) + 770  # --rank 4 reached the config
    # no --lr: "auto" is the default, so the search chose the learning rate the run used
    assert summary["requested"] == {"lr": "auto", "epochs": 1}
    assert summary["lr"] == summary["lr_search"]["chosen"] and summary["epochs_run"] == 1


def test_predict_writes_what_the_trained_model_predicted(trained: tuple[Path, dict], tmp_path: Path) -> None:
    """predict reloads the run folder from disk; training computed these rows' probabilities
    in memory at its end (check_predictions.json): both must agree, row by row."""
    out, _ = trained
    check = json.loads((out / "check_predictions.json").read_text())
    labels = json.loads((out / "labels.json").read_text())["id2label"]
    data = tmp_path / "new.csv"
    with data.open("w", newline="") as fh:
        csv.writer(fh).writerows([["text"], *([t] for t in check["texts"])])
    proc = cli("predict", "--artifact", str(out), "--data", str(data), "--out", str(tmp_path / "p.csv"))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert len(rows) == len(check["texts"]) > 0
    for row, probs in zip(rows, check["probs"], strict=True):
        best = max(range(len(probs)), key=probs.__getitem__)
        assert row["predicted_label"] == labels[str(best)]
        assert abs(float(row["probability"]) - probs[best]) < 1e-5


def test_export_zip_holds_standard_files(trained: tuple[Path, dict], tmp_path: Path) -> None:
    out, _ = trained
    proc = cli("export", "--artifact", str(out), "--out", str(tmp_path / "run.zip"))
    assert proc.returncode == 0, proc.stderr
    names = set(zipfile.ZipFile(tmp_path / "run.zip").namelist())
    assert {
        "adapter_config.json",
        "adapter_model.safetensors",
        "labels.json",
        "README.md",
        "tokenizer.json",
        "training_config.json",
        "metrics.json",
    } <= names


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "does-not-exist.csv", "--method", "lora"], "does-not-exist.csv"),
        (["--data", "{tiny}", "--method", "prompt", "--rank", "8"], "--rank applies to lora"),
        (["--data", "{tiny}", "--method", "full", "--quant", "8bit"], "quantized base"),
        (["--data", "{tiny}", "--method", "lora", "--label-column", "stars"], "stars"),
        (
            ["--data", "{tiny}", "--method", "adapter", "--bottleneck", "5000"],
            "Bottleneck size must be between",
        ),
        (["--data", "{tiny}", "--method", "lora", "--model", "no-such/model-xyz"], "not available"),
        (["--data", "{tiny}", "--method", "lora", "--lr", "fast"], "learning rate must be 'auto' or"),
        (["--data", "{tiny}", "--method", "lora", "--epochs", "2.5"], "epochs must be 'auto' or an integer"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tiny_csv: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    args = [a.replace("{tiny}", str(tiny_csv)) for a in args]
    proc = cli("train", *args, "--out", str(tmp_path / "never"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and message in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "never").exists()
