"""A probe's layer "auto": chosen on rows held out from training, the last kept unless beaten."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from backend.methods.probe import AUTO_LAYER, Config
from backend.probing.layer_choice import choose_layer, describe_layer_choice
from backend.run import run_training
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig
from tests.conftest import sentiment_rows, write_csv

LABELS = ["neg", "pos"]


def features(informative: set[int], layers: int = 4, rows: int = 400) -> tuple[torch.Tensor, torch.Tensor]:
    """[layers, rows, 16] noise; the label moves feature 0 by ±1.5 in the ``informative`` layers."""
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(rows) % 2
    x = torch.randn(layers, rows, 16, generator=gen)
    for layer in informative:
        x[layer, :, 0] += 3.0 * y - 1.5
    return x, y


def choose(x: torch.Tensor, y: torch.Tensor) -> dict:
    cfg = TrainConfig(data="unused.csv", method="probe", seed=0, batch_size=32)
    return choose_layer(x, y, Config(), cfg, LABELS, epochs=10, cb=Callback())


def test_auto_takes_the_layer_that_carries_the_label() -> None:
    choice = choose(*features({1}))
    assert choice["chosen"] == 1 and not choice["kept_last"]
    scores = {r["layer"]: r for r in choice["layers"]}
    assert scores[1]["holdout_loss"] < min(scores[i]["holdout_loss"] for i in (0, 2, 3))
    assert choice["holdout_rows"] == 80 and choice["train_rows"] == 320  # 20% held out
    assert "layer auto chose layer 1" in describe_layer_choice(choice)


def test_auto_keeps_the_last_layer_when_no_other_is_better_beyond_the_noise() -> None:
    choice = choose(*features(set()))  # no layer knows the label: every difference is noise
    assert choice["best"] != 3, "the check needs a noisy best that is not the last layer"
    assert choice["chosen"] == 3 and choice["kept_last"]
    assert "kept the last layer, 3" in describe_layer_choice(choice)
    # when the last layer does know the label, it is simply the best
    assert choose(*features({3}))["chosen"] == 3


def test_a_default_probe_records_its_choice_and_never_reads_the_evaluation_set(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", sentiment_rows(120))
    right = write_csv(tmp_path / "eval.csv", sentiment_rows(40, seed=1))
    # the same texts with every label flipped: a choice that read the evaluation rows would move
    flipped = [(text, "neg" if label == "pos" else "pos") for text, label in sentiment_rows(40, seed=1)]
    wrong = write_csv(tmp_path / "flipped.csv", flipped)
    runs = {}
    for name, eval_csv in (("right", right), ("wrong", wrong)):
        cfg = TrainConfig(data=str(train), eval_data=str(eval_csv), method="probe", max_length=32, seed=0)
        assert cfg.method_settings().layer == AUTO_LAYER  # the default
        runs[name] = run_training(cfg, tmp_path / name, feature_cache_dir=tmp_path / "features")
    choice = runs["right"]["layer_choice"]
    assert choice is not None and choice == {**runs["wrong"]["layer_choice"], "seconds": choice["seconds"]}
    assert runs["right"]["accuracy"] != runs["wrong"]["accuracy"]  # the evaluation set did differ
    assert runs["right"]["layer"] == choice["chosen"]
    record = json.loads((tmp_path / "right" / "training_config.json").read_text())
    assert record["method_config"]["layer"] == choice["chosen"] and record["layer_choice"] == choice
    assert describe_layer_choice(choice) in (tmp_path / "right" / "README.md").read_text()
