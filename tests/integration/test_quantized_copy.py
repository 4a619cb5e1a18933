"""A quantized base is saved once, without its head, and read back bit-identically.

Loads SmolLM2-135M (the offline decoder, 513 MB of fp32 weights) in 4 and 8 bits into a
fresh models cache: the first load quantizes from fp32 and writes the copy, the second reads
the copy. The peak memory this saves is measured by bench/models.py, not here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from backend.catalogue import ModelInfo, load_classifier, model_info
from backend.offline_models import SMOLLM2, offline_snapshot
from backend.quantized_copy import MIN_SOURCE_BYTES, READY, copy_folder
from backend.settings import Settings

LABELS = ["a", "b", "c"]


@pytest.fixture(scope="module")
def smollm2() -> ModelInfo:
    cache = Settings.from_env().models_cache
    offline_snapshot(SMOLLM2, cache)  # converts only when the cache lacks it
    return model_info(SMOLLM2.hub_id, cache)


def seeded_load(info: ModelInfo, quant: str) -> torch.nn.Module:
    torch.manual_seed(0)  # the head is drawn from the seed, as in a run
    return load_classifier(info, LABELS, quant, pad_token_id=0)


@pytest.mark.parametrize("quant", ["4bit", "8bit"])
def test_the_second_quantized_load_reads_the_saved_copy_and_matches_the_first(
    smollm2: ModelInfo, quant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_MODELS_CACHE", str(tmp_path))
    first = seeded_load(smollm2, quant)
    made = sorted((tmp_path / "quantized").glob(f"*/{quant}"))
    assert len(made) == 1 and (made[0] / READY).is_file()
    copy = made[0]
    assert copy.parent.name.startswith("HuggingFaceTB--SmolLM2-135M-Instruct-")
    with safe_open(str(copy / "model.safetensors"), framework="pt") as f:
        keys = list(f.keys())
    assert keys and not [k for k in keys if k.startswith("score.")]  # each run makes its own head

    second = seeded_load(smollm2, quant)
    assert second.config._name_or_path == str(copy)  # read from the copy, not quantized again
    assert first.config._name_or_path == smollm2.path
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys()
    assert [k for k in a if not torch.equal(a[k], b[k])] == []
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(first(input_ids=ids).logits, second(input_ids=ids).logits)


def test_a_copy_is_keyed_by_its_source_files_and_only_made_for_large_weights(tmp_path: Path) -> None:
    source = tmp_path / "model"
    source.mkdir()
    weights = source / "model.safetensors"
    with weights.open("wb") as f:
        f.truncate(MIN_SOURCE_BYTES - 1)  # sparse: no disk used
    assert copy_folder(str(source), "4bit", tmp_path, "m") is None  # too small to pay
    with weights.open("r+b") as f:
        f.truncate(MIN_SOURCE_BYTES)
    before = copy_folder(str(source), "4bit", tmp_path, "org/m")
    assert before is not None and before.parent.parent == tmp_path / "quantized"
    assert before.name == "4bit" and before.parent.name.startswith("org--m-")
    assert copy_folder(str(source), "8bit", tmp_path, "org/m") == before.parent / "8bit"
    assert copy_folder(str(source), "4bit", tmp_path, "org/m", "nf4, fp16 compute") != before
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the weights changed
    assert copy_folder(str(source), "4bit", tmp_path, "org/m") != before
    assert copy_folder("HuggingFaceTB/not-downloaded", "4bit", tmp_path, "x") is None
