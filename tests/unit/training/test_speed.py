"""Speed features keep results right: length-grouped batches, mixed precision, throughput figures.

Speed itself is measured in bench/speed.py (figures, not timed tests); here we check that
the faster paths give the same answers and the stored weights stay standard fp32.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from backend.artifacts.reload_check import run_fresh_process
from backend.catalogue import load_tokenizer, model_info
from backend.data.batching import MEGA_BATCHES, SEARCH_MEGA_BATCHES, Encoded
from backend.data.prepare import Split
from backend.errors import ConfigError
from backend.run import run_training
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data, validate
from backend.training.fast_dropout import FastDropout, use_fast_dropout
from backend.training.metrics import predict_probs
from backend.training.runtime import PLAIN_KERNELS_ENV, adamw, cpu_has_bf16, resolve_precision
from backend.training.setup import build_model
from backend.training.throughput import Throughput
from tests.conftest import write_csv

WORDS = ["good", "bad", "film", "plot", "long", "short", "very", "quite", "the", "a"]


def varied_split(n: int, seed: int = 0) -> Split:
    """Rows of 2 to 60 words: what real data looks like to a padder."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 60))) for _ in range(n)]
    return Split(texts=texts, pairs=None, labels=[i % 2 for i in range(n)], rows=list(range(n)))


@pytest.fixture(scope="module")
def tokenizer() -> object:
    return load_tokenizer(model_info("all-MiniLM-L6-v2"))


def padded_tokens(enc: Encoded, order: list[int], batch_size: int) -> int:
    lengths = enc.lengths
    return sum(
        max(lengths[i] for i in order[s : s + batch_size]) * len(order[s : s + batch_size])
        for s in range(0, len(order), batch_size)
    )


def test_grouped_order_is_a_seeded_shuffle_with_far_less_padding(tokenizer: object) -> None:
    enc = Encoded(tokenizer, varied_split(640), max_length=128)
    grouped = enc.train_order(32, seed=3)
    assert sorted(grouped) == list(range(640))
    assert grouped == enc.train_order(32, seed=3)  # a resumed epoch replays the same batches
    assert grouped != enc.train_order(32, seed=4)
    plain = enc.train_order(32, seed=3, group_by_length=False)
    assert padded_tokens(enc, grouped, 32) < 0.7 * padded_tokens(enc, plain, 32)
    # Mega-batches are sorted inside, but the epoch as a whole is not one long sorted run.
    firsts = [enc.lengths[grouped[s]] for s in range(0, 640, 32)]
    assert firsts != sorted(firsts) and firsts != sorted(firsts, reverse=True)


@pytest.mark.parametrize("side", ["right", "left"])
def test_batches_collate_as_the_tokenizers_pad_does(tokenizer: object, side: str) -> None:
    # Encoded.batch pads in numpy (10x faster); it must give exactly tokenizer.pad's tensors,
    # for pairs (token_type_ids) and on either padding side.
    tok = load_tokenizer(model_info("all-MiniLM-L6-v2"), padding_side=side)
    single, pairs = varied_split(40), varied_split(40, seed=1)
    pairs.pairs = varied_split(40, seed=2).texts
    for split in (single, pairs):
        enc = Encoded(tok, split, max_length=48)
        for rows in ([3, 0, 17, 5], list(range(40)), [7]):
            fast = enc.batch(rows)
            slow = tok.pad([enc.features[i] for i in rows], padding="longest", return_tensors="pt")
            assert set(fast) == {*slow, "labels"} and len(set(enc.lengths)) > 5
            for key in slow:
                assert torch.equal(fast[key], slow[key]), (side, key)
    assert enc.batch([0, 1], pad_to=64)["input_ids"].shape == (2, 64)  # the benchmark's fixed length


def test_larger_mega_batches_pad_less(tokenizer: object) -> None:
    # Training mixes lengths in mega-batches of MEGA_BATCHES; the learning-rate search asks for
    # transformers' larger ones (SEARCH_MEGA_BATCHES), which sort more rows together.
    enc = Encoded(tokenizer, varied_split(1280), max_length=128)
    training = padded_tokens(enc, enc.train_order(8, seed=0), 8)
    search = padded_tokens(enc, enc.train_order(8, seed=0, mega_batches=SEARCH_MEGA_BATCHES), 8)
    plain = padded_tokens(enc, enc.train_order(8, seed=0, group_by_length=False), 8)
    assert MEGA_BATCHES < SEARCH_MEGA_BATCHES
    assert search < 0.9 * training < 0.9 * plain, (search, training, plain)


def test_grouped_batches_come_in_random_order_longest_first(tokenizer: object) -> None:
    # 650 rows: 20 full batches and a short one. transformers' recipe alone leaves each of its
    # 6 mega-batches sorted longest first, so batch maxima rise only where a mega-batch starts.
    enc = Encoded(tokenizer, varied_split(650), max_length=128)
    lengths = enc.lengths
    rises = []
    for seed in range(5):
        order = enc.train_order(32, seed=seed)
        batches = [order[s : s + 32] for s in range(0, 650, 32)]
        tops = [max(lengths[i] for i in batch) for batch in batches]
        assert sorted(order) == list(range(650)) and len(batches[-1]) == 650 % 32
        assert tops[0] == max(lengths)  # an out-of-memory still shows on the first step
        rises.append(sum(b > a for a, b in itertools.pairwise(tops)))
    # Shuffled batches rise about half the time (~10 of 20); sorted mega-batches at most 5 times.
    assert sum(rises) / len(rises) > 6, rises


def test_length_sorted_prediction_keeps_the_row_order(tokenizer: object, tiny_csv: Path) -> None:
    cfg = TrainConfig(data=str(tiny_csv), method="lora", device="cpu")
    info = model_info(cfg.model)
    model = build_model(cfg, info, load_data(cfg).label_names, tokenizer.pad_token_id)  # type: ignore[attr-defined]
    enc = Encoded(tokenizer, varied_split(40, seed=1), max_length=128)
    assert enc.by_length() != list(range(40))  # sorting really reorders these rows
    sorted_probs = predict_probs(model, enc, torch.device("cpu"), batch_size=8, group_by_length=True)
    plain_probs = predict_probs(model, enc, torch.device("cpu"), batch_size=8, group_by_length=False)
    assert np.abs(sorted_probs - plain_probs).max() < 1e-5


def dropout_calls(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(fast dropout modules run in one training forward, fast dropout modules there are)."""
    swapped = use_fast_dropout(model)
    ran: list[int] = []
    for module in model.modules():
        if isinstance(module, FastDropout):
            module.register_forward_hook(lambda *_: ran.append(1))
    model.train()(**batch)
    return len(ran), swapped


def test_cpu_training_takes_eager_attention_whose_dropout_is_the_fast_one(
    tokenizer: object, tiny_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = TrainConfig(data=str(tiny_csv), method="full", device="cpu")
    info, labels, pad = model_info(cfg.model), load_data(cfg).label_names, tokenizer.pad_token_id  # type: ignore[attr-defined]
    torch.manual_seed(0)
    eager = build_model(cfg, info, labels, pad)
    monkeypatch.setenv(PLAIN_KERNELS_ENV, "1")  # the plain loop keeps transformers' default
    torch.manual_seed(0)
    sdpa = build_model(cfg, info, labels, pad)
    assert (eager.config._attn_implementation, sdpa.config._attn_implementation) == ("eager", "sdpa")
    split = varied_split(24, seed=2)
    batch = {k: torch.as_tensor(v) for k, v in tokenizer(split.texts[:8], padding=True).items()}  # type: ignore[operator]
    calls = [dropout_calls(model, batch) for model in (eager, sdpa)]
    # Every dropout module is the fast one, and each runs but the attention probabilities'
    # (6 layers): transformers 5 drops those inside the attention function with torch's
    # functional dropout, reading only the module's p, in eager as in SDPA.
    assert calls[0] == calls[1] == (20 - 6, 20), calls
    # Same weights, same predictions: what the export reloaded with SDPA reproduces.
    enc = Encoded(tokenizer, split, max_length=128)
    a, b = (predict_probs(m, enc, torch.device("cpu"), batch_size=8) for m in (eager, sdpa))
    assert np.abs(a - b).max() < 1e-5


def test_precision_setting() -> None:
    assert resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"  # asked for: emulated where not native
    assert resolve_precision("auto", "cpu") == ("bf16" if cpu_has_bf16() else "fp32")
    assert resolve_precision("bf16", "cpu", "8bit") == resolve_precision("auto", "cpu", "4bit") == "fp32"
    with pytest.raises(ConfigError, match="Precision must be one of auto, fp32, bf16"):
        validate(TrainConfig(data="x.csv", method="lora", precision="fp8"))


def test_the_switch_makes_any_cpu_take_the_fp32_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """WORKBENCH_CPU_BF16=0 (``make test-fp32``): "auto" trains in fp32 as on an AVX2-only CPU,
    and the device line and the bf16 warning say so, whatever this CPU has."""
    from backend.training.runtime import CPU_BF16_ENV, cpu_setup, precision_line

    monkeypatch.setenv(CPU_BF16_ENV, "0")
    assert not cpu_has_bf16() and resolve_precision("auto", "cpu") == "fp32"
    assert precision_line("cpu").startswith("fp32 (this CPU has no native bf16")
    assert "emulated" in (cpu_setup(torch.nn.Linear(2, 2), torch.device("cpu"), "bf16") or "")


def test_training_steps_with_fused_adamw_unless_benchmarking_the_plain_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch.manual_seed(0)
    start = [torch.randn(300, 40), torch.randn(40)]
    grads = [torch.randn_like(t) for t in start]

    def two_steps() -> tuple[torch.optim.AdamW, list[torch.Tensor]]:
        params = [torch.nn.Parameter(t.clone()) for t in start]
        opt = adamw([(str(i), p) for i, p in enumerate(params)], 1e-2, 0.01, {})
        for _ in range(2):
            for p, g in zip(params, grads, strict=True):
                p.grad = g.clone()
            opt.step()
        return opt, [p.detach() for p in params]

    fused, fused_params = two_steps()
    monkeypatch.setenv(PLAIN_KERNELS_ENV, "1")
    plain, plain_params = two_steps()
    assert fused.defaults["fused"] is True and not plain.defaults["fused"]
    # the same update (AdamW with decoupled weight decay), only computed in one kernel
    for a, b, s in zip(fused_params, plain_params, start, strict=True):
        assert not torch.equal(a, s) and torch.allclose(a, b, atol=1e-6)


def test_throughput_counts_real_and_padded_tokens() -> None:
    t = Throughput()
    t.add(
        {
            "input_ids": torch.ones(2, 5, dtype=torch.long),
            "attention_mask": torch.tensor([[1] * 5, [1, 1, 0, 0, 0]]),
        }
    )
    assert (t.real, t.padded) == (7, 10)


def test_bf16_run_trains_fp32_weights_and_exports_reload_exactly(tmp_path: Path) -> None:
    """bf16 autocast only changes the matrix products: the adapter on disk is fp32 and a fresh
    process loading it predicts the stored check rows to 1e-5 (the final predictions are fp32)."""
    rng = random.Random(0)
    rows = [
        (
            " ".join(
                ["great" if i % 2 else "awful"] + [rng.choice(WORDS) for _ in range(rng.randint(1, 20))]
            ),
            "pos" if i % 2 else "neg",
        )
        for i in range(48)
    ]
    data = write_csv(tmp_path / "varied.csv", rows)
    cfg = TrainConfig(
        data=str(data),
        method="lora",
        epochs=1,
        lr=3e-3,
        batch_size=16,
        max_length=16,
        precision="bf16",
        device="cpu",
    )
    summary = run_training(cfg, tmp_path / "run")
    assert summary["precision"] == "bf16"
    assert summary["group_by_length"] is True
    weights = load_file(str(tmp_path / "run" / "adapter_model.safetensors"))
    assert weights and all(t.dtype == torch.float32 for t in weights.values())
    assert summary["tokens_per_second"] > 0
    assert 0 <= summary["padding_share"] < 1
    assert 0 < summary["mfu"] < 1
    check = run_fresh_process(tmp_path / "run")
    assert check["ok"], check


def test_probe_features_length_sorted_and_in_bf16(tokenizer: object) -> None:
    from backend.probing.features import compute_features, load_encoder

    encoder = load_encoder(model_info("all-MiniLM-L6-v2"), "none", "cpu")
    enc = Encoded(tokenizer, varied_split(24, seed=2), max_length=64)
    plain = compute_features(encoder, enc, "mean", False, batch_size=8, group_by_length=False)
    grouped = compute_features(encoder, enc, "mean", False, batch_size=8)
    assert (plain - grouped).abs().max() < 1e-4  # sorted batches, rows put back in place
    bf16 = compute_features(encoder, enc, "mean", False, batch_size=8, precision="bf16")
    assert bf16.dtype == torch.float32 and bf16.shape == grouped.shape
    assert (bf16 - grouped).abs().max() > 1e-4  # autocast really ran
    cosine = torch.nn.functional.cosine_similarity(bf16[-1], grouped[-1], dim=-1)
    assert cosine.min() > 0.99


class Logs(Callback):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def on_log(self, message: str) -> None:
        self.lines.append(message)


def test_bf16_probe_computes_training_features_in_bf16_and_dev_features_in_fp32(tmp_path: Path) -> None:
    """The dev rows' features are what the exported probe computes (fp32): the reported metrics
    and the reload check's rows are reproduced by a fresh process."""
    rows = [
        (f"{'great' if i % 2 else 'awful'} {WORDS[i % len(WORDS)]} film", "pos" if i % 2 else "neg")
        for i in range(40)
    ]
    data = write_csv(tmp_path / "probe.csv", rows)
    cfg = TrainConfig(
        data=str(data), method="probe", epochs=5, lr=1e-2, max_length=16, precision="bf16", device="cpu"
    )
    logs = Logs()
    summary = run_training(cfg, tmp_path / "run", callback=logs, feature_cache_dir=tmp_path / "features")
    computed = [line for line in logs.lines if line.startswith("computing features")]
    assert computed == [
        f"computing features of every layer for {summary['train_rows']} rows (bf16)",
        f"computing features of every layer for {summary['eval_rows']} rows (fp32)",
    ]
    assert len(set(summary["feature_cache_keys"])) == 2
    check = run_fresh_process(tmp_path / "run")
    assert check["ok"], check
