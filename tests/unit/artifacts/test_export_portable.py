"""An exported zip works on another machine: unzipped elsewhere, loaded with the plain libraries
in a fresh process (offline, the hub id resolved from the tests' HF_HOME), same predictions.
Runs on the tiny BERT, installed under its own hub id as the default model is under its own.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.artifacts.export import export_zip
from backend.artifacts.load import Predictor
from backend.run import run_training
from backend.training.config import TrainConfig
from tests.conftest import ROOT
from tests.fresh_python import RESULT, fresh_python, fresh_python_each
from tests.tiny_models import TINY_BERT

TEXTS = ["the film was wonderful and moving", "a dull and tedious plot", "the cast was fun"]
__all__ = ["fresh_python"]  # shared with the decoder and SmolLM2 tests


def train(tiny_csv: Path, method: str, out: Path) -> Path:
    cfg = TrainConfig(
        data=str(tiny_csv), model=TINY_BERT, method=method, epochs=1 if method != "probe" else 5, lr=None,
        batch_size=16, max_length=16,
    )  # fmt: skip
    return Path(run_training(cfg, out)["artifact_dir"])


def unzip_elsewhere(run: Path, target: Path, **kwargs: bool) -> tuple[Path, zipfile.ZipFile]:
    archive = export_zip(run, target.with_suffix(".zip"), **kwargs)
    zf = zipfile.ZipFile(archive)
    zf.extractall(target)
    return target, zf


def card_snippet(folder: Path) -> str:
    card = (folder / "README.md").read_text()
    return re.search(r"```python\n(.*?)```", card, re.S).group(1)


PREDICT = f"""
import json
enc = tok({TEXTS!r}, return_tensors="pt", truncation=True, max_length=16, padding=True)
with torch.no_grad():
    out = model(**enc)
print({RESULT!r} + json.dumps(torch.softmax(getattr(out, "logits", out), -1).tolist()))
"""


@pytest.fixture(scope="module")
def runs(tiny_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("portable")
    return {m: train(tiny_csv, m, folder / m) for m in METHODS}


METHODS = ["lora", "adapter", "full", "probe"]


AUTO_PEFT = (
    "import torch\n"
    "from peft import AutoPeftModelForSequenceClassification\n"
    "from transformers import AutoTokenizer\n"
    "model = AutoPeftModelForSequenceClassification.from_pretrained('.', num_labels=2).eval()\n"
    "tok = AutoTokenizer.from_pretrained('.')\n" + PREDICT
)


@pytest.fixture(scope="module")
def elsewhere(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each run's zip unzipped elsewhere, its card's snippet run there, and the LoRA folder loaded
    by AutoPeftModel alone: all in one fresh process, each script in its own namespace."""
    folders = {m: unzip_elsewhere(runs[m], tmp_path_factory.mktemp(f"elsewhere-{m}") / m)[0] for m in METHODS}
    jobs = [(folders[m], card_snippet(folders[m]) + PREDICT) for m in METHODS] + [
        (folders["lora"], AUTO_PEFT)
    ]
    results = fresh_python_each(jobs)
    return {"folders": folders, "cards": dict(zip(METHODS, results, strict=False)), "auto_peft": results[-1]}


@pytest.mark.parametrize("method", METHODS)
def test_card_snippet_runs_elsewhere_offline_and_predicts_like_the_app(
    runs: dict[str, Path], elsewhere: dict[str, Any], method: str
) -> None:
    want = Predictor(runs[method]).predict_proba(TEXTS)
    np.testing.assert_allclose(np.asarray(elsewhere["cards"][method]), want, atol=1e-5)


def test_auto_peft_model_loads_the_folder_by_its_hub_id(
    runs: dict[str, Path], elsewhere: dict[str, Any]
) -> None:
    config = json.loads((elsewhere["folders"]["lora"] / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == TINY_BERT
    np.testing.assert_allclose(
        np.asarray(elsewhere["auto_peft"]), Predictor(runs["lora"]).predict_proba(TEXTS), atol=1e-5
    )


@pytest.mark.parametrize("method", METHODS)
def test_zip_holds_no_server_path_and_no_texts(runs: dict[str, Path], method: str, tiny_csv: Path) -> None:
    archive = export_zip(runs[method], runs[method].parent / f"{method}.zip")
    server = [str(ROOT), str(Path.home()), sys.prefix, str(runs[method].parent), str(tiny_csv.parent)]
    texts = [row["text"] for row in csv.DictReader(tiny_csv.open())]
    with zipfile.ZipFile(archive) as zf:
        assert "check_predictions.json" not in zf.namelist()
        for name in zf.namelist():
            if name.endswith((".safetensors", ".bin")):
                continue
            content = zf.read(name).decode("utf-8", errors="replace")
            for path in server:
                assert path not in content, f"{name} holds the server path {path}"
            assert not any(text in content for text in texts), f"{name} holds a training text"
        workbench = json.loads(zf.read("workbench.json"))
        assert workbench["base_model"] == TINY_BERT and "base_model_path" not in workbench
        assert json.loads(zf.read("training_config.json"))["data"] == tiny_csv.name


def test_sample_predictions_only_when_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    _, zf = unzip_elsewhere(runs["lora"], tmp_path / "with-samples", include_samples=True)
    samples = json.loads(zf.read("check_predictions.json"))
    assert samples["texts"] and len(samples["probs"]) == len(samples["texts"])
