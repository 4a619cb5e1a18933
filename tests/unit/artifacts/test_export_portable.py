"""An exported zip works on another machine: unzipped elsewhere, loaded with the plain libraries
in a fresh process (offline, the hub id resolved from the project's HF_HOME), same predictions.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from backend.artifacts.export import export_zip
from backend.artifacts.load import Predictor
from backend.catalogue import DEFAULT_HUB_ID
from backend.run import run_training
from backend.settings import Settings
from backend.training.config import TrainConfig
from tests.conftest import ROOT

TEXTS = ["the film was wonderful and moving", "a dull and tedious plot", "the cast was fun"]
RESULT = "RESULT "


def train(tiny_csv: Path, method: str, out: Path) -> Path:
    cfg = TrainConfig(
        data=str(tiny_csv), method=method, epochs=1 if method != "probe" else 5, lr=None, batch_size=16,
        max_length=16,
    )  # fmt: skip
    return Path(run_training(cfg, out)["artifact_dir"])


def unzip_elsewhere(run: Path, target: Path, **kwargs: bool) -> tuple[Path, zipfile.ZipFile]:
    archive = export_zip(run, target.with_suffix(".zip"), **kwargs)
    zf = zipfile.ZipFile(archive)
    zf.extractall(target)
    return target, zf


def fresh_python(code: str, cwd: Path) -> list[list[float]]:
    """Run ``code`` in a new interpreter outside the project, offline, with the project's HF_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKBENCH_", "PYTHONPATH"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(Settings.from_env().models_cache))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT))
    return json.loads(line[len(RESULT) :])


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
    return {m: train(tiny_csv, m, folder / m) for m in ("lora", "adapter", "full", "probe")}


@pytest.mark.parametrize("method", ["lora", "adapter", "full", "probe"])
def test_card_snippet_runs_elsewhere_offline_and_predicts_like_the_app(
    runs: dict[str, Path], method: str, tmp_path: Path
) -> None:
    folder, _ = unzip_elsewhere(runs[method], tmp_path / "elsewhere")
    got = np.asarray(fresh_python(card_snippet(folder) + PREDICT, folder))
    want = Predictor(runs[method]).predict_proba(TEXTS)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_auto_peft_model_loads_the_folder_by_its_hub_id(runs: dict[str, Path], tmp_path: Path) -> None:
    folder, _ = unzip_elsewhere(runs["lora"], tmp_path / "elsewhere")
    assert (
        json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == DEFAULT_HUB_ID
    )
    code = (
        "import torch\n"
        "from peft import AutoPeftModelForSequenceClassification\n"
        "from transformers import AutoTokenizer\n"
        "model = AutoPeftModelForSequenceClassification.from_pretrained('.', num_labels=2).eval()\n"
        "tok = AutoTokenizer.from_pretrained('.')\n" + PREDICT
    )
    got = np.asarray(fresh_python(code, folder))
    np.testing.assert_allclose(got, Predictor(runs["lora"]).predict_proba(TEXTS), atol=1e-5)


@pytest.mark.parametrize("method", ["lora", "adapter", "full", "probe"])
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
        assert workbench["base_model"] == DEFAULT_HUB_ID and "base_model_path" not in workbench
        assert json.loads(zf.read("training_config.json"))["data"] == tiny_csv.name


def test_sample_predictions_only_when_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    _, zf = unzip_elsewhere(runs["lora"], tmp_path / "with-samples", include_samples=True)
    samples = json.loads(zf.read("check_predictions.json"))
    assert samples["texts"] and len(samples["probs"]) == len(samples["texts"])
