"""Decoder classification done properly: every method that applies trains (its loss drops and
every trainable weight gets a gradient, under gradient checkpointing where the method can use
it), pooling reads the last real token whatever the padding side, pairs get a separator, and an
export reloads bit-identically elsewhere.

Mechanics run on the tiny random LLaMA (tests/tiny_models.py: SmolLM2's tokenizer, 2 layers,
hidden size 32, grouped-query attention). QLoRA runs on the real SmolLM2-135M-Instruct: whether
bitsandbytes' 4-/8-bit layers of a real decoder train on the CPU is the figure that matters there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from backend.artifacts.load import Predictor
from backend.catalogue import ModelInfo, load_tokenizer, model_info
from backend.data.batching import Encoded
from backend.data.prepare import Split
from backend.errors import ConfigError
from backend.methods import registry
from backend.methods.probe_head import pool
from backend.offline_models import SMOLLM2, offline_snapshot
from backend.probing.features import load_encoder
from backend.run import run_training
from backend.settings import Settings
from backend.training.config import TrainConfig, validate
from backend.training.runtime import use_checkpointing
from backend.training.setup import build_model, checkpointing_on
from tests.conftest import sentiment_rows, write_csv
from tests.integration.test_smollm2 import PARAMS
from tests.tiny_models import TINY_LLAMA
from tests.unit.artifacts.test_export_portable import card_snippet, fresh_python, unzip_elsewhere
from tests.unit.methods.test_methods import Recorder, first_vs_last_epoch

ROWS, BATCH, MAX_LENGTH, STEPS = 32, 4, 32, 4
# Every method that trains a decoder through its forward pass, with the settings that matter
# there (LoRA on LLaMA's q_proj/v_proj, or every linear layer); short prompts keep steps cheap.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "lora-q,v": ("lora", {}),
    "lora-all-linear": ("lora", {"targets": "all linear"}),
    "ia3": ("ia3", {}),
    "prompt": ("prompt", {"prompt_length": 8}),
    "prefix": ("prefix", {"prompt_length": 8}),
    "ptuning": ("ptuning", {"prompt_length": 8}),
    "adapter": ("adapter", {}),
    "full": ("full", {}),
}
# The LLaMA modules each weight method adapts (PEFT's names for this architecture).
TARGETS = {
    "lora-q,v": {"q_proj", "v_proj"},
    "lora-all-linear": {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
    "ia3": {"k_proj", "v_proj", "down_proj"},  # down_proj: the FFN, scaled on its input
}
# Learning rates for a few steps on one batch (the methods' defaults are for whole runs).
STEP_LR = {"full": 1e-4, "prompt": 1e-2, "ptuning": 1e-2}
LABELS = ["neg", "pos"]


def reviews(n: int) -> list[tuple[str, str]]:
    """conftest's reviews, some made longer: batches of mixed lengths, so padding is real."""
    return [(text + ", I thought" * (i % 3), label) for i, (text, label) in enumerate(sentiment_rows(n))]


@pytest.fixture(scope="module")
def info() -> ModelInfo:
    return model_info(TINY_LLAMA)


@pytest.fixture(scope="module")
def smollm2() -> ModelInfo:
    cache = Settings.from_env().models_cache
    offline_snapshot(SMOLLM2, cache)  # converts the GGUF only when the cache lacks it
    return model_info(SMOLLM2.name, cache)


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_csv(tmp_path_factory.mktemp("decoder") / "reviews.csv", reviews(ROWS + 8))


@pytest.fixture(scope="module")
def split() -> Split:
    rows = reviews(ROWS)
    return Split([t for t, _ in rows], None, [int(label == "pos") for _, label in rows], list(range(ROWS)))


def train_steps(model: Any, batch: dict[str, torch.Tensor], lr: float) -> tuple[float, float, list[str]]:
    """``STEPS`` optimizer steps on ``batch`` in training mode (so gradient checkpointing runs):
    the loss before, the loss after, and the trainable tensors that never got a gradient."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    opt = torch.optim.AdamW([p for _, p in named], lr=lr)
    model.train()
    reached: set[str] = set()
    losses = []
    for _ in range(STEPS):
        loss = model(**batch).loss
        loss.backward()
        reached |= {n for n, p in named if p.grad is not None and bool(p.grad.any())}
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    with torch.no_grad():
        after = float(model(**batch).loss)
    return losses[0], after, [n for n, _ in named if n not in reached]


@pytest.mark.parametrize("case", list(CASES))
def test_each_method_trains_a_decoder_and_its_loss_drops(info: ModelInfo, split: Split, case: str) -> None:
    method, settings = CASES[case]
    spec = registry.get(method)
    # every method that can trains under gradient checkpointing ("auto" turns it on above 100M
    # parameters, as for SmolLM2): the gradients must reach its weights through the recompute
    checkpointing = "on" if spec.gradient_checkpointing else "auto"
    cfg = TrainConfig(data="unused", model=TINY_LLAMA, method=method, method_config=settings,
                      gradient_checkpointing=checkpointing)  # fmt: skip
    tok = load_tokenizer(info, spec.padding_side(info))
    torch.manual_seed(0)
    model = build_model(cfg, info, LABELS, tok.pad_token_id)
    assert checkpointing_on(model) == spec.gradient_checkpointing
    trainable = [p for p in model.parameters() if p.requires_grad]
    share = sum(p.numel() for p in trainable) / sum(p.numel() for p in model.parameters())
    assert share > 0.99 if method == "full" else 0 < share < 0.05
    if case in TARGETS:
        adapted = {
            n.rsplit(".", 1)[-1]
            for n, m in model.named_modules()
            if hasattr(m, "lora_A") or hasattr(m, "ia3_l")
        }
        assert adapted == TARGETS[case]
    batch = Encoded(tok, split, MAX_LENGTH).batch(list(range(BATCH)))
    assert (batch["attention_mask"] == 0).any()  # padded rows: pooling must skip the padding
    before, after, untouched = train_steps(model, batch, STEP_LR.get(method, spec.default_lr))
    assert after < before, f"{case}: loss {before:.4f} -> {after:.4f} in {STEPS} steps"
    # the method's own weights learn, not only the new head (prefixes under checkpointing would not)
    assert not untouched, f"{case}: no gradient reached {untouched[:3]}"


@pytest.mark.parametrize("quant", ["8bit", "4bit"])
def test_lora_trains_on_a_quantized_smollm2_on_the_cpu(smollm2: ModelInfo, split: Split, quant: str) -> None:
    """QLoRA on the real decoder: its 4-/8-bit layers train on the CPU under checkpointing."""
    cfg = TrainConfig(data="unused", model=SMOLLM2.name, method="lora", quant=quant)
    tok = load_tokenizer(smollm2)
    torch.manual_seed(0)
    model = build_model(cfg, smollm2, LABELS, tok.pad_token_id)
    assert checkpointing_on(model)
    base = model.base_model.model.model.layers[0].mlp.down_proj
    assert type(base).__name__ == ("Linear8bitLt" if quant == "8bit" else "Linear4bit")
    batch = Encoded(tok, split, MAX_LENGTH).batch(list(range(BATCH)))
    before, after, untouched = train_steps(model, batch, 2e-3)
    assert after < 0.5 * before and not untouched, f"{quant}: loss {before:.4f} -> {after:.4f}"


@pytest.mark.parametrize("method", ["prompt", "ptuning"])
def test_prompt_methods_pad_decoders_on_the_left(info: ModelInfo, method: str) -> None:
    """PEFT hands the model embeddings (virtual tokens prepended), so the head cannot find the
    pad id and reads the last position: on the right that is a pad token. Pads on the left put
    every row's last real token there."""
    spec = registry.get(method)
    assert spec.padding_side(info) == "left" and registry.get("lora").padding_side(info) is None
    tok = load_tokenizer(info, spec.padding_side(info))
    texts = [text for text, _ in reviews(BATCH)]
    batch = tok(texts, padding=True, return_tensors="pt")
    assert (batch["attention_mask"] == 0).any() and bool(batch["attention_mask"][:, -1].all())


def test_left_padding_keeps_a_ptuned_decoder_prediction_close_to_the_unpadded_one(info: ModelInfo) -> None:
    """Not equal: LLaMA counts the pads in the positions between the virtual tokens and the text
    (PEFT's prompt methods take no position ids; on SmolLM2 the gap was up to 0.1), but right
    padding is far off: it classifies a pad token."""
    cfg = TrainConfig(data="unused", model=TINY_LLAMA, method="ptuning")
    torch.manual_seed(0)
    tok = load_tokenizer(info, "left")
    model = build_model(cfg, info, LABELS, tok.pad_token_id).eval()
    short, long = "a great film", "this was a dull and far too long story with a weak ending"
    gaps = {}
    with torch.no_grad():
        alone = model(**tok([short], return_tensors="pt")).logits[0]
        for side in ("left", "right"):
            tok.padding_side = side
            padded = model(**tok([short, long], padding=True, return_tensors="pt")).logits[0]
            gaps[side] = float((padded - alone).abs().max())
    assert gaps["left"] < 0.01 < 0.1 < gaps["right"], gaps


def test_last_token_pooling_reads_the_last_real_token_on_either_padding_side(info: ModelInfo) -> None:
    encoder = load_encoder(info, "none", "cpu")
    texts = ["a great film", "this was a dull and far too long story with a weak ending"]
    with torch.no_grad():
        alone = encoder(**load_tokenizer(info)([texts[0]], return_tensors="pt")).last_hidden_state[0, -1]
        for side in ("right", "left"):
            batch = load_tokenizer(info, side)(texts, padding=True, return_tensors="pt")
            hidden = encoder(**batch).last_hidden_state
            pooled = pool(hidden, batch["attention_mask"], "cls", last_token=True)[0]
            torch.testing.assert_close(pooled, alone, atol=1e-4, rtol=1e-4, msg=side)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_probing_trains_on_decoder_hidden_states(
    csv_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pooling: str
) -> None:
    rec = Recorder()
    cfg = TrainConfig(
        data=str(csv_file), model=TINY_LLAMA, method="probe", method_config={"pooling": pooling},
        epochs=15, lr=None, batch_size=BATCH, max_length=MAX_LENGTH, early_stopping_patience=0,
    )  # fmt: skip
    summary = run_training(cfg, tmp_path / "run", callback=rec, feature_cache_dir=tmp_path / "features")
    first, last = first_vs_last_epoch(rec)
    assert last < 0.7 * first, f"probe ({pooling}): loss {first:.4f} -> {last:.4f}"
    run = tmp_path / "run"
    probe = json.loads((run / "probe_config.json").read_text())
    assert probe["pooling"] == pooling and probe["last_token"] is True
    assert summary["accuracy"] > 0.5
    # the model card's plain-torch code pools the same token as the app (decoders: the last real one)
    scope: dict[str, Any] = {}
    monkeypatch.chdir(run)
    exec(card_snippet(run), scope)  # the card's own code, run as a user would
    texts = [text for text, _ in reviews(3)]
    enc = scope["tok"](texts, padding=True, return_tensors="pt", truncation=True, max_length=MAX_LENGTH)
    with torch.no_grad():
        got = torch.softmax(scope["model"](**enc), -1).numpy()
    np.testing.assert_allclose(got, Predictor(run).predict_proba(texts), atol=1e-5)


def test_gradient_checkpointing_is_a_setting_on_by_default_above_100m_parameters(csv_file: Path) -> None:
    assert TrainConfig(data="x", method="lora").gradient_checkpointing == "auto"
    assert use_checkpointing("auto", True, PARAMS)  # SmolLM2-135M
    assert not use_checkpointing("auto", True, 22_713_216)  # all-MiniLM-L6-v2, the default
    assert use_checkpointing("on", True, 22_713_216) and not use_checkpointing("off", True, PARAMS)
    assert not use_checkpointing("auto", registry.get("prefix").gradient_checkpointing, PARAMS)
    with pytest.raises(ConfigError, match="Prefix tuning cannot train with gradient checkpointing"):
        validate(TrainConfig(data=str(csv_file), method="prefix", gradient_checkpointing="on"))
    validate(TrainConfig(data=str(csv_file), method="prefix", gradient_checkpointing="auto"))


def test_sentence_pairs_are_joined_by_a_separator_the_tokenizer_knows(info: ModelInfo) -> None:
    from transformers import AutoTokenizer

    shipped = AutoTokenizer.from_pretrained(info.path)
    tok = load_tokenizer(info)
    first, second = shipped("a film")["input_ids"], shipped("it was good")["input_ids"]
    assert shipped("a film", "it was good")["input_ids"] == first + second  # no separator
    assert tok("a film", "it was good")["input_ids"] == [*first, tok.eos_token_id, *second]
    assert tok("a film")["input_ids"] == first  # single texts tokenize as before


def test_adapters_refuse_decoders_the_library_does_not_support(info: ModelInfo) -> None:
    spec = registry.get("adapter")
    assert spec.refuses is not None and spec.refuses(info) is None  # LLaMA: supported
    opt = ModelInfo("facebook/opt-125m", "unused", "opt", 768, 12, True)
    with pytest.raises(ConfigError, match=r"Bottleneck adapters do not support opt models.*choose LoRA"):
        spec.check_model(opt)


def test_a_prompt_tuned_pair_classifier_reloads_bit_identically_elsewhere(
    tmp_path: Path,
) -> None:
    """Left padding and the pair separator live in the saved tokenizer: the model card's plain
    transformers + peft code, in a fresh process outside the project, offline, predicts exactly
    what the training process did."""
    rows = reviews(ROWS + 8)
    path = tmp_path / "pairs.csv"
    with path.open("w") as fh:
        fh.write("text,text_pair,label\n")
        fh.writelines(
            f'"{t}",{"so I recommend it" if i % 3 else "the end"},{y}\n' for i, (t, y) in enumerate(rows)
        )
    cfg = TrainConfig(
        data=str(path), model=TINY_LLAMA, method="prompt", method_config={"prompt_length": 8},
        text_pair_column="text_pair", epochs=1, lr=None, batch_size=8, max_length=MAX_LENGTH,
    )  # fmt: skip
    run = Path(run_training(cfg, tmp_path / "run")["artifact_dir"])
    check = json.loads((run / "check_predictions.json").read_text())
    folder, _ = unzip_elsewhere(run, tmp_path / "elsewhere")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.padding_side == "left" and tok.eos_token_id in tok("a", "b")["input_ids"]
    # the training process predicted the rows length-sorted in one batch: the same order here
    lengths = [len(tok(t, p)["input_ids"]) for t, p in zip(check["texts"], check["pairs"], strict=True)]
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    texts, pairs = [check["texts"][i] for i in order], [check["pairs"][i] for i in order]
    predict = (
        f"\nimport json\nenc = tok({texts!r}, {pairs!r}, return_tensors='pt', padding=True, "
        f"truncation=True, max_length={MAX_LENGTH})\nwith torch.no_grad():\n"
        "    probs = torch.softmax(model(**enc).logits, -1)\n"
        "print('RESULT ' + json.dumps(probs.tolist()))\n"
    )
    got = np.asarray(
        fresh_python("import torch\n" + card_snippet(folder) + predict, folder), dtype=np.float32
    )
    want = np.asarray(check["probs"], dtype=np.float32)[order]
    assert np.array_equal(got, want), f"max difference {np.abs(got - want).max()}"
