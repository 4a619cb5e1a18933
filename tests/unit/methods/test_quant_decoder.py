"""Quantized bases (bitsandbytes on the CPU) and decoder models with a classification head."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backend.artifacts.reload_check import QUANTIZED_TOLERANCE, run_fresh_process
from backend.errors import ConfigError
from backend.run import run_training
from backend.training.config import TrainConfig, validate
from tests.unit.methods.test_methods import Recorder, first_vs_last_epoch


@pytest.mark.parametrize("quant", ["8bit", "4bit"])
def test_lora_trains_on_quantized_base_on_cpu(tiny_csv: Path, tmp_path: Path, quant: str) -> None:
    rec = Recorder()
    cfg = TrainConfig(
        data=str(tiny_csv), method="lora", quant=quant, epochs=3, batch_size=16, max_length=32, lr=None
    )
    summary = run_training(cfg, tmp_path / quant, callback=rec)
    first, last = first_vs_last_epoch(rec)
    assert last < first, f"{quant}: loss {first:.4f} -> {last:.4f}"
    assert summary["quant"] == quant and summary["eval_loss"] == summary["eval_loss"]  # not NaN
    # the same 4-bit/8-bit base is rebuilt on reload, so predictions match exactly
    assert run_fresh_process(summary["artifact_dir"])["ok"]


@pytest.mark.parametrize("quant", ["8bit", "4bit"])
@pytest.mark.parametrize("method", ["probe", "prompt", "prefix", "ptuning", "adapter", "ia3"])
def test_every_frozen_base_method_trains_on_a_quantized_base(
    tiny_csv: Path, tmp_path: Path, quant: str, method: str
) -> None:
    """LoRA above, and every other method that keeps the base frozen: trains, reloads exactly."""
    rec = Recorder()
    cfg = TrainConfig(
        data=str(tiny_csv), method=method, quant=quant, epochs=2 if method != "probe" else 10,
        batch_size=16, max_length=16, lr=None, early_stopping_patience=0,
    )  # fmt: skip
    summary = run_training(cfg, tmp_path / f"{method}-{quant}", callback=rec)
    first, last = first_vs_last_epoch(rec)
    assert last < first, f"{method} on {quant}: loss {first:.4f} -> {last:.4f}"
    assert summary["quant"] == quant
    checked = run_fresh_process(summary["artifact_dir"])
    assert checked["ok"] and checked["tolerance"] == QUANTIZED_TOLERANCE, checked


def test_full_finetuning_refuses_a_quantized_base(tiny_csv: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be done on a 4bit quantized base"):
        validate(TrainConfig(data=str(tiny_csv), method="full", quant="4bit"))


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 2-layer GPT-2 (decoder) saved like a local model folder."""
    import torch
    from transformers import GPT2Config, GPT2Model

    from backend.catalogue import default_model_path

    out = tmp_path_factory.mktemp("tiny-gpt2")
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=30522, n_positions=128, n_embd=64, n_layer=2, n_head=2)).save_pretrained(
        out
    )
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(default_model_path() / name, out / name)  # any tokenizer with this vocab works
    return out


@pytest.mark.parametrize("method", ["lora", "prefix", "adapter", "probe"])
def test_decoder_model_with_classification_head(
    tiny_csv: Path, tiny_gpt2: Path, tmp_path: Path, method: str
) -> None:
    cfg = TrainConfig(
        data=str(tiny_csv), model=str(tiny_gpt2), method=method, epochs=1, max_length=32, lr=None
    )
    summary = run_training(cfg, tmp_path / method, feature_cache_dir=tmp_path / "features")
    assert summary["trainable_params"] > 0
    assert run_fresh_process(summary["artifact_dir"])["ok"]
