"""Every method trains the regression task (issue 38) on the tiny random BERT, and its export
reloads as a one-output regression head: the standard libraries' load in a fresh process
predicts the stored rows again, and so does the model card's own snippet, outside the app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from backend.methods import registry
from tests.exports import train_and_reload
from tests.unit.test_regression import score_rows, write

METHODS = [spec.key for spec in registry.all_methods()]
RAW_SUFFIX = """
import json as _json
_chk = _json.load(open("check_predictions.json"))
_enc = tok(_chk["texts"], return_tensors="pt", truncation=True, max_length={max_length}, padding=True)
with torch.no_grad():
    _out = model(**_enc)
print("RESULT", _json.dumps(getattr(_out, "logits", _out).tolist()))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("regression")
    return train_and_reload(write(root / "scores.csv", score_rows(80, 7)), root, METHODS, RAW_SUFFIX)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_a_score_and_its_export_reloads(exported: dict[str, Any], method: str) -> None:
    summary = exported["summaries"][method]
    assert (summary["task"], summary["primary_metric"]) == ("regression", "spearman")
    assert summary["score"] == pytest.approx(summary["spearman"]) and summary["rmse"] > 0
    out = Path(summary["artifact_dir"])
    assert json.loads((out / "workbench.json").read_text())["task"] == "regression"
    result = exported["checks"][method]
    assert result["ok"], result
    stored = json.loads((out / "check_predictions.json").read_text())["probs"]
    assert len(stored[0]) == 1  # one output per text: the score
    card = exported["cards"][method]
    assert [row[0] for row in card] == pytest.approx([row[0] for row in stored], abs=1e-5)
    readme = (out / "README.md").read_text()
    assert "softmax" not in readme and "| spearman |" in readme and "training mean" in readme


def test_a_regression_lora_run_merges_into_a_one_output_head(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    """Merging keeps the task's head (one output, ``problem_type="regression"``) and its check
    compares the scores the run stored (it used to compare a softmax of one output: always 1)."""
    import zipfile

    from backend.artifacts.merge import merge_lora

    folder = Path(exported["summaries"]["lora"]["artifact_dir"])
    with zipfile.ZipFile(merge_lora(folder, tmp_path / "merged.zip")) as zf:
        zf.extractall(tmp_path / "merged")
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert (config["num_labels"] if "num_labels" in config else len(config["id2label"])) == 1
    assert config["problem_type"] == "regression"
    assert "softmax" not in (tmp_path / "merged" / "README.md").read_text()
