"""Every method trains token classification (issue 38) on the tiny random BERT from a CoNLL
file, and its export reloads as ``AutoModelForTokenClassification`` (or the probe's own head):
the standard libraries' load in a fresh process predicts the stored sentences again, and so
does the model card's own snippet outside the app, whose pipeline gives entities where
transformers' pipeline can run the model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.artifacts.reload_check import run_fresh_processes
from backend.methods import registry
from backend.run import run_training
from backend.training.config import TrainConfig
from tests.exports import train_and_reload
from tests.tiny_models import TINY_LLAMA
from tests.token_data import sentences, write_conll

METHODS = [spec.key for spec in registry.all_methods()]
# After the card's snippet: each stored sentence's tag per word, as the snippet's model gives it
WORD_TAGS = """
import json as _json
_chk = _json.load(open("check_predictions.json"))
_words = [t.split(" ") for t in _chk["texts"]]
_enc = tok(_words, is_split_into_words=True, return_tensors="pt", truncation=True, max_length={max_length},
           padding=True)
with torch.no_grad():
    _out = model(**_enc)
_logits = getattr(_out, "logits", _out)[:, -_enc["input_ids"].shape[1]:]
_tags = []
for _i in range(len(_words)):
    _seen, _row = set(), []
    for _j, _w in enumerate(_enc.word_ids(_i)):
        if _w is not None and _w not in _seen:
            _seen.add(_w)
            _row.append(int(_logits[_i, _j].argmax()))
    _tags.append(_row)
print("RESULT", _json.dumps({{"tags": _tags, "pipeline": "tagger" in globals()}}))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("tokens")
    return train_and_reload(write_conll(root / "train.conll", sentences(80, 0)), root, METHODS, WORD_TAGS)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_tags_and_its_export_reloads(exported: dict[str, Any], method: str) -> None:
    summary = exported["summaries"][method]
    assert (summary["task"], summary["primary_metric"]) == ("token-classification", "entity_f1")
    assert summary["score"] == pytest.approx(summary["entity_f1"])
    for key in ("entity_precision", "entity_recall", "entity_macro_f1", "token_accuracy"):
        assert 0.0 <= summary[key] <= 1.0, key
    assert set(summary["per_entity"]) == {"PER", "LOC"}  # seqeval's per-type table
    assert summary["baseline"]["tag"] == "O" and summary["baseline"]["score"] == 0.0
    low, high = summary["score_ci"]
    assert low <= summary["score"] <= high
    out = Path(summary["artifact_dir"])
    manifest = json.loads((out / "workbench.json").read_text())
    assert manifest["task"] == "token-classification"
    result = exported["checks"][method]
    assert result["ok"], result
    stored = json.loads((out / "check_predictions.json").read_text())
    want = [list(np.nan_to_num(np.asarray(p, dtype=float)).argmax(-1)[: len(t.split(" "))])
            for p, t in zip(stored["probs"], stored["texts"], strict=True)]  # fmt: skip
    card = exported["cards"][method]
    assert card["tags"] == want  # the card's snippet, outside the app, tags every word the same
    readme = (out / "README.md").read_text()
    assert "AutoModelForSequenceClassification" not in readme and "bootstrap over the sentences" in readme
    # transformers' pipeline runs the export, except a probe (a function) and virtual input tokens
    assert card["pipeline"] == (manifest["library"] != "own" and not registry.get(method).feeds_embeddings)


@pytest.mark.parametrize("method", ["lora", "prompt", "probe"])
def test_the_decoder_tags_words_too(tmp_path: Path, method: str) -> None:
    """SmolLM2's architecture (the tiny Llama): left padding, virtual tokens in front of it, and
    a per-word probe on the last layers' causal states; each export reloads and predicts the same."""
    data = write_conll(tmp_path / "train.conll", sentences(60, 0))
    cfg = TrainConfig(data=str(data), method=method, model=TINY_LLAMA, epochs=1, batch_size=16, max_length=32,
                      lr=None, early_stopping_patience=0)  # fmt: skip
    summary = run_training(cfg, tmp_path / method, feature_cache_dir=tmp_path / "features")
    assert summary["task"] == "token-classification" and 0.0 <= summary["token_accuracy"] <= 1.0
    (check,) = run_fresh_processes([Path(summary["artifact_dir"])])
    assert check["ok"], check


def test_a_token_lora_run_merges_into_a_plain_token_classifier(
    exported: dict[str, Any], tmp_path: Path
) -> None:
    """The merged LoRA model is a plain ``AutoModelForTokenClassification`` that tags the stored
    sentences as the adapter did (the merge checks that itself), and its card's snippet runs."""
    import zipfile

    from backend.artifacts.merge import merge_lora
    from tests.fresh_python import fresh_python_each

    folder = Path(exported["summaries"]["lora"]["artifact_dir"])
    with zipfile.ZipFile(merge_lora(folder, tmp_path / "merged.zip")) as zf:
        zf.extractall(tmp_path / "merged")
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"]
    code = re.search(r"```python\n(.*?)```", (tmp_path / "merged" / "README.md").read_text(), re.S).group(1)
    (tags,) = fresh_python_each(
        [(tmp_path / "merged", code + 'print("RESULT", json.dumps(tagger("Ada met Bob")))\n')]
    )
    assert isinstance(tags, list)  # the pipeline's entities (maybe none from a 1-epoch tiny model)
