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
from tests.tiny_models import HIDDEN, LAYERS, TINY_BERT

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
        "--model",
        TINY_BERT,
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
    assert (
        summary["trainable_params"] == LAYERS * 2 * (2 * 4 * HIDDEN) + HIDDEN * 2 + 2
    )  # --rank 4 reached it
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
    tiny_csv: Path, tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's own code in this process (``app.main``), as a shell calls it; the first case
    also runs as a real process, so the exit status and stderr are the process's own."""
    args = [a.replace("{tiny}", str(tiny_csv)) for a in args]
    argv = ["train", *args, "--out", str(tmp_path / "never")]
    if "does-not-exist.csv" in args:
        proc = cli(*argv)
        code, stderr = proc.returncode, proc.stderr
    else:
        code, stderr = app_main(argv), capsys.readouterr().err
    assert code == 2, stderr[-2000:]
    lines = [ln for ln in stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and message in lines[0], stderr[-2000:]
    assert "Traceback" not in stderr
    assert not (tmp_path / "never").exists()


def app_main(argv: list[str]) -> int:
    from app import main

    return main(argv)


def parse_train(*args: str) -> object:
    from service.cli import build_parser
    from service.cli_args import train_config_from_args

    return train_config_from_args(build_parser().parse_args(["train", "--out", "x", *args]))


def test_flags_come_from_the_method_specs_and_the_settings_metadata() -> None:
    import argparse

    from backend.methods import registry
    from backend.methods.base import fields_info
    from backend.training.config import TrainConfig
    from service.cli_args import add_train_arguments

    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    flags = {s: action for action in parser._actions for s in action.option_strings}
    assert {"--" + f["flag"].replace("_", "-") for f in fields_info(TrainConfig)} <= set(flags)
    assert {"--rank", "--prompt-length", "--bottleneck", "--layer", "--patience"} <= set(flags)
    assert list(flags["--method"].choices) == registry.keys()

    cfg = parse_train("--data", "d.csv", "--method", "probe", "--layer", "all", "--lr", "default")
    assert (cfg.method_config, cfg.lr, cfg.epochs) == ({"sweep_layers": True}, None, "auto")
    cfg = parse_train("--data", "d.csv", "--method", "prompt", "--prompt-length", "8", "--patience", "0")
    assert (cfg.method_config, cfg.early_stopping_patience) == ({"prompt_length": 8}, 0)
    assert parse_train("--data", "d.csv", "--method", "probe", "--layer", "2").method_config == {"layer": 2}
    auto = parse_train("--data", "d.csv", "--method", "probe", "--layer", "auto")
    assert auto.method_config == {"layer": -2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "lora", "--layer", "3"], "--layer applies to probe, not lora"),
        (
            ["--method", "probe", "--layer", "top"],
            "--layer must be an integer or 'all' or 'auto' or 'last', not 'top'",
        ),
        (["--method", "ia3", "--prompt-length", "4"], "--prompt-length applies to prefix, prompt, ptuning"),
        (["--method", "lora", "--set", "rank"], "--set expects KEY=VALUE"),
    ],
)
def test_misapplied_method_flags_are_config_errors(args: list[str], message: str) -> None:
    from backend.errors import ConfigError

    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_train("--data", "d.csv", *args)
