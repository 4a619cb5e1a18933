"""Every method trains the multi-label task (issue 46) on the tiny random BERT, the probe
included, and its export reloads as one sigmoid per label: the standard libraries' load in a
fresh process gives the stored probabilities and label sets again, and the model card's own
snippet (sigmoid, then the run's threshold from ``labels.json``) gives the app's label sets,
outside the app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.methods import registry
from tests.exports import train_and_reload
from tests.label_set_data import LABELS, label_sets, write_lists

METHODS = [spec.key for spec in registry.all_methods()]
# the card's snippet, run on the stored check rows: each row's label set by its own lines
SETS_SUFFIX = """
import json as _json
_chk = _json.load(open("check_predictions.json"))
_enc = tok(_chk["texts"], return_tensors="pt", truncation=True, max_length={max_length}, padding=True)
with torch.no_grad():
    _out = model(**_enc)
_p = torch.sigmoid(getattr(_out, "logits", _out).float())
_cut, _names = meta["threshold"], meta["id2label"]
print("RESULT", _json.dumps([[_names[str(i)] for i, p in enumerate(r.tolist()) if p >= _cut] for r in _p]))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("label-sets")
    return train_and_reload(write_lists(root / "sets.jsonl", label_sets(120, 5)), root, METHODS, SETS_SUFFIX)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_label_sets_and_its_export_reloads(exported: dict[str, Any], method: str) -> None:
    summary = exported["summaries"][method]
    assert (summary["task"], summary["primary_metric"]) == ("multi-label", "micro_f1")
    assert summary["score"] == pytest.approx(summary["micro_f1"])
    assert set(summary["per_label"]) == set(LABELS) and summary["baseline"]["label_set"]
    out = Path(summary["artifact_dir"])
    labels = json.loads((out / "labels.json").read_text())
    threshold = float(json.loads((out / "workbench.json").read_text())["task_config"]["threshold"])
    assert labels["problem_type"] == "multi_label_classification"
    assert labels["threshold"] == threshold == summary["threshold"] and 0 < threshold < 1  # "auto" chose it
    result = exported["checks"][method]
    assert result["ok"], result
    stored = np.asarray(json.loads((out / "check_predictions.json").read_text())["probs"])
    assert stored.shape[1] == len(LABELS)
    want = [[LABELS[i] for i in np.flatnonzero(row >= threshold)] for row in stored]
    assert exported["cards"][method] == want  # the card's sets are the app's
    readme = (out / "README.md").read_text()
    assert "softmax" not in readme and "| micro_f1 |" in readme and "most frequent label set" in readme


def test_a_label_set_lora_run_merges_into_a_sigmoid_head(exported: dict[str, Any], tmp_path: Path) -> None:
    """The merged model keeps one output per label, ``problem_type`` and the threshold beside it."""
    import zipfile

    from backend.artifacts.merge import merge_lora

    folder = Path(exported["summaries"]["lora"]["artifact_dir"])
    with zipfile.ZipFile(merge_lora(folder, tmp_path / "merged.zip")) as zf:
        zf.extractall(tmp_path / "merged")
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert config["problem_type"] == "multi_label_classification" and len(config["id2label"]) == len(LABELS)
    labels = json.loads((tmp_path / "merged" / "labels.json").read_text())
    assert labels["threshold"] == exported["summaries"]["lora"]["threshold"]
    readme = (tmp_path / "merged" / "README.md").read_text()
    assert "softmax" not in readme and "meta['threshold']" in readme
