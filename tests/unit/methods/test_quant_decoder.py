"""Quantized bases (bitsandbytes on the CPU) and decoder models with a classification head: mechanics,
on tiny random models. QLoRA on the real SmolLM2 is tests/integration/test_decoder_methods.py's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from backend.artifacts.reload_check import QUANTIZED_TOLERANCE, run_fresh_processes
from backend.errors import ConfigError
from backend.run import run_training
from backend.training.config import TrainConfig, validate
from tests.tiny_models import TINY_BERT
from tests.unit.methods.test_methods import Recorder, first_vs_last_epoch

QUANTS = ["8bit", "4bit"]
FROZEN_BASE = ["lora", "probe", "prompt", "prefix", "ptuning", "adapter", "ia3"]


@pytest.fixture(scope="module")
def quantized_runs(tiny_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """Every method that keeps the base frozen, on the tiny BERT quantized to 8 and 4 bits: the
    run's summary, its training losses, and the reload check of all of them in one fresh
    process (the same 4-bit/8-bit base is rebuilt on reload, so predictions match)."""
    root = tmp_path_factory.mktemp("quantized")
    runs: dict[tuple[str, str], Any] = {}
    for quant in QUANTS:
        for method in FROZEN_BASE:
            rec = Recorder()
            cfg = TrainConfig(
                data=str(tiny_csv), model=TINY_BERT, method=method, quant=quant,
                epochs=20, batch_size=16, max_length=16, lr=None,
                early_stopping_patience=0,
            )  # fmt: skip
            runs[method, quant] = {
                "summary": run_training(cfg, root / f"{method}-{quant}", callback=rec),
                "rec": rec,
            }
    checks = run_fresh_processes([r["summary"]["artifact_dir"] for r in runs.values()])
    for run, check in zip(runs.values(), checks, strict=True):
        run["check"] = check
    return runs


@pytest.mark.parametrize("quant", QUANTS)
@pytest.mark.parametrize("method", FROZEN_BASE)
def test_every_frozen_base_method_trains_on_a_quantized_base(
    quantized_runs: dict[tuple[str, str], Any], quant: str, method: str
) -> None:
    """LoRA (QLoRA) and every other method that keeps the base frozen: trains, reloads exactly."""
    run = quantized_runs[method, quant]
    first, last = first_vs_last_epoch(run["rec"])
    assert last < first, f"{method} on {quant}: loss {first:.4f} -> {last:.4f}"
    summary = run["summary"]
    assert summary["quant"] == quant and summary["eval_loss"] == summary["eval_loss"]  # not NaN
    assert run["check"]["ok"] and run["check"]["tolerance"] == QUANTIZED_TOLERANCE, run["check"]


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


DECODER_METHODS = ["lora", "prefix", "adapter", "probe"]


@pytest.fixture(scope="module")
def decoder_runs(tiny_csv: Path, tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gpt2-runs")
    summaries = {
        method: run_training(
            TrainConfig(
                data=str(tiny_csv), model=str(tiny_gpt2), method=method, epochs=1, max_length=32, lr=None
            ),
            root / method,
            feature_cache_dir=root / "features",
        )
        for method in DECODER_METHODS
    }
    checks = run_fresh_processes([summaries[m]["artifact_dir"] for m in DECODER_METHODS])
    return {m: (summaries[m], check) for m, check in zip(DECODER_METHODS, checks, strict=True)}


@pytest.mark.parametrize("method", DECODER_METHODS)
def test_decoder_model_with_classification_head(decoder_runs: dict[str, Any], method: str) -> None:
    """A GPT-2 style decoder from a local folder: each kind of method trains and reloads."""
    summary, check = decoder_runs[method]
    assert summary["trainable_params"] > 0
    assert check["ok"], check
