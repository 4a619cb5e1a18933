"""The forecast's arithmetic: padded tokens as the run batches them, calibration from
finished runs, memory terms, and the whole forecast adding up."""

from __future__ import annotations

import random

import pytest

from backend.forecast import (
    ACTIVATION_BYTES,
    CHECKPOINT_BYTES,
    ModelShape,
    calibrated_throughput,
    eval_padded_tokens,
    fit_base_mb,
    fits,
    forecast_run,
    memory_mb,
    padded_tokens,
)


def test_padded_tokens_follow_the_batching() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(5, 120) for _ in range(640)]
    grouped = padded_tokens(lengths, 640, 32, 128, grouped=True)
    plain = padded_tokens(lengths, 640, 32, 128, grouped=False)
    assert sum(lengths) <= grouped < 0.7 * plain  # grouping pads far less, never below the real tokens
    assert padded_tokens(lengths, 1280, 32, 128, grouped=True) == pytest.approx(
        2 * grouped
    )  # scales with rows
    assert padded_tokens([200] * 64, 64, 32, 128, grouped=True) == 64 * 128  # cut at max length
    assert padded_tokens([], 100, 32, 128, grouped=True) == 0
    assert eval_padded_tokens([3, 3, 9, 9], 4, 128, batch_size=2) == 2 * 3 + 2 * 9  # sorted: no padding here


def test_calibration_takes_the_median_of_usable_runs() -> None:
    assert calibrated_throughput([900.0, 1000.0, 5000.0, 0.0, float("nan")]) == 1000.0
    assert calibrated_throughput([]) is None


def test_memory_terms() -> None:
    lora = ModelShape(total_params=22_700_000, trainable_params=75_000, hidden_size=384, num_layers=6)
    full = ModelShape(total_params=22_700_000, trainable_params=22_700_000, hidden_size=384, num_layers=6)
    assert memory_mb(full, 32, 64) - memory_mb(lora, 32, 64) == pytest.approx((22_625_000 * 12) / 2**20)
    assert memory_mb(lora, 64, 64) > memory_mb(lora, 32, 64)  # activations grow with the batch
    four_bit = ModelShape(22_700_000, 75_000, 384, 6, quant="4bit")
    assert memory_mb(four_bit, 32, 64) < memory_mb(lora, 32, 64)
    # The coefficient fitted from a run's measured peak reproduces that peak.
    peak = memory_mb(lora, 32, 64, base_mb=900.0)
    assert fit_base_mb([(lora, 32, 64, peak)]) == pytest.approx(900.0)
    assert memory_mb(lora, 32, 64, base_mb=fit_base_mb([(lora, 32, 64, peak)]) or 0) == pytest.approx(peak)
    assert fit_base_mb([(lora, 32, 64, 10.0)]) is None  # below the model's own terms: unusable


def test_gradient_checkpointing_keeps_one_layer_of_activations_and_each_layers_input() -> None:
    plain = ModelShape(134_500_000, 460_000, 576, 30)
    checkpointed = ModelShape(134_500_000, 460_000, 576, 30, checkpointed=True)
    per_layer = ACTIVATION_BYTES * 32 * 128 * 576 / 2**20  # one layer's activations, MB
    saved = memory_mb(plain, 32, 128) - memory_mb(checkpointed, 32, 128)
    inputs = 30 * CHECKPOINT_BYTES * 32 * 128 * 576 / 2**20
    assert saved == pytest.approx(29 * per_layer - inputs)


def test_a_forecast_adds_up() -> None:
    f = forecast_run(
        train_tokens=60_000,
        eval_tokens=30_000,
        epochs=3,
        throughput=1_000,
        source="test",
        search_share=0.1,
        peak_mb=900,
    )
    assert f.seconds_per_epoch == 60 and f.eval_seconds == 10 and f.search_seconds == pytest.approx(18)
    assert f.total_seconds == pytest.approx(3 * 70 + 18)
    assert fits(900, 1000) and not fits(950, 1000)


def test_training_the_top_layers_costs_their_share_each_epoch_after_one_pass_below() -> None:
    """Top 2 of 6 layers: each epoch (training and evaluation) runs a third of the layers; the
    four below run once, without gradients, over the training and evaluation rows."""
    from backend.methods import registry
    from backend.methods.layers import trained_layer_share

    lora = registry.get("lora")
    assert trained_layer_share(lora.make_config({"top_layers": 2}), 6) == pytest.approx(1 / 3)
    assert trained_layer_share(lora.make_config({}), 6) == 1.0
    assert trained_layer_share(registry.get("prompt").make_config({}), 6) == 1.0  # no such setting
    common = {"train_tokens": 60_000, "eval_tokens": 30_000, "epochs": 3, "throughput": 1_000,
              "source": "test", "search_share": 0.1, "peak_mb": 900}  # fmt: skip
    full = forecast_run(**common)
    top = forecast_run(**common, layer_share=1 / 3)
    assert top.seconds_per_epoch == pytest.approx(20) and top.eval_seconds == pytest.approx(10 / 3)
    cache = (2 / 3) * (60 / 3 + 10)  # the lower layers, forward only: training rows and evaluation rows
    assert top.total_seconds == pytest.approx(3 * (20 + 10 / 3) + cache + full.search_seconds)
    assert top.total_seconds < full.total_seconds
