"""The multi-label task from the command line (issue 46): ``--task multi-label``,
``--label-separator`` and ``--label-columns``; the last line's keys; each bad input one
``error:`` line, exit status 2, and no run folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.label_set_data import LABELS, label_sets, write_binary, write_joined
from tests.tiny_models import TINY_BERT
from tests.unit.service.test_cli import app_main, cli

LAST_LINE = {"task", "primary_metric", "score", "score_ci", "micro_f1", "macro_f1", "samples_f1",
             "subset_accuracy", "hamming_loss", "threshold"}  # fmt: skip


def test_train_names_the_task_and_its_separator_and_prints_its_metrics_last(tmp_path: Path) -> None:
    data = write_joined(tmp_path / "sets.csv", label_sets(100, 1), sep="|")
    out = tmp_path / "run"
    proc = cli("train", "--data", str(data), "--model", TINY_BERT, "--method", "lora", "--epochs", "1",
               "--lr", "0.003", "--max-length", "16", "--task", "multi-label", "--label-separator", "|",
               "--threshold", "0.4", "--out", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary.keys() >= LAST_LINE
    assert (summary["task"], summary["primary_metric"], summary["threshold"]) == (
        "multi-label",
        "micro_f1",
        0.4,
    )
    assert summary["score"] == summary["micro_f1"] and len(summary["score_ci"]) == 2
    assert json.loads((out / "labels.json").read_text())["threshold"] == 0.4
    manifest = json.loads((out / "workbench.json").read_text())
    assert manifest["task_config"] == {"threshold": "0.4", "label_separator": "|", "label_columns": ""}
    assert manifest["label_names"] == list(LABELS)
    assert (
        "- Task: Multi-label classification, threshold 0.4, label_separator |\n"
        in (out / "README.md").read_text()
    )
    check = json.loads((out / "check_predictions.json").read_text())
    texts = tmp_path / "texts.csv"
    texts.write_text("text\n" + "\n".join(check["texts"]) + "\n")
    proc = cli("predict", "--artifact", str(out), "--data", str(texts), "--out", str(tmp_path / "p.csv"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert len(rows) == len(check["probs"]) > 0
    for row, probs in zip(rows, check["probs"], strict=True):  # the reloaded run predicts what training did
        assert json.loads(row["predicted_labels"]) == [
            n for n, p in zip(LABELS, probs, strict=True) if p >= 0.4
        ]
        assert json.loads(row["probabilities"]) == pytest.approx(
            dict(zip(LABELS, probs, strict=True)), abs=1e-5
        )


def bad_files(tmp: Path) -> dict[str, Path]:
    files = {
        "two": "text,joy,fear\nhappy,1,0\nscared,2,1\nglad,0,1\n",
        "none": '{"text": "a", "labels": []}\n{"text": "b", "labels": []}\n',
        "empty_name": "text,labels\nhappy,joy;;fear\nsad,fear\n",
        "eval": "text,labels\nhappy,joy\ncalm,calm\n",
    }
    paths = {k: tmp / (f"{k}.jsonl" if v.startswith("{") else f"{k}.csv") for k, v in files.items()}
    for key, text in files.items():
        paths[key].write_text(text)
    paths["train"] = write_joined(tmp / "train.csv", label_sets(40, 2))
    paths["flags"] = write_binary(tmp / "flags.csv", label_sets(40, 3))
    return paths


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{two}", "--label-columns", "joy,fear"], "the label column 'joy' holds '2' in row 2"),
        (["--data", "{none}"], "no row of column 'labels' has any label"),
        (["--data", "{train}", "--eval-data", "{eval}"], "only in the evaluation file, never in"),
        (["--data", "{empty_name}", "--task", "multi-label"], "'joy;;fear' has an empty label name"),
        (["--data", "{flags}", "--label-columns", "joy,calm"], "name 'calm', which the file does not have"),
        (["--data", "{train}", "--threshold", "1.5"], "Threshold must be 'auto' or a number between 0 and 1"),
        (["--data", "{train}", "--task", "classification", "--label-separator", ";"],
         "--label-separator applies to the task multi-label, not classification"),
    ],
)  # fmt: skip
def test_bad_label_sets_exit_2_with_one_line_and_no_run(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = bad_files(tmp_path)
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in args]
    code = app_main(
        ["train", *args, "--model", TINY_BERT, "--method", "lora", "--out", str(tmp_path / "never")]
    )
    stderr = capsys.readouterr().err
    lines = [ln for ln in stderr.splitlines() if ln.startswith("error: ")]
    assert code == 2 and len(lines) == 1 and message in lines[0], stderr[-2000:]
    assert "Traceback" not in stderr and not (tmp_path / "never").exists()
