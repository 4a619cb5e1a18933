"""Real data: prefix tuning through its MLP (Li & Liang's reparameterization) must learn.

With one learning rate for the MLP and the new head, every such run on the four shared sets
ended at the majority class; the MLP now learns at a fraction of the head's rate
(``backend.methods.prefix.lr_scales``).
"""

from __future__ import annotations

from pathlib import Path

from backend.run import run_training
from backend.training.config import TrainConfig


def test_reparameterized_prefix_learns_emotion_at_its_default_rate(shared_data: Path, tmp_path: Path) -> None:
    cfg = TrainConfig(
        data=str(shared_data / "emotion" / "train.csv"),
        eval_data=str(shared_data / "emotion" / "test.csv"),
        method="prefix",
        method_config={"reparameterize": True},
        max_train_samples=1000,
        max_length=64,
        epochs=2,
        seed=0,
    )
    summary = run_training(cfg, tmp_path / "prefix-mlp")
    majority = summary["majority_baseline"]["accuracy"]  # 0.35: six classes, "joy" the most
    assert summary["accuracy"] >= majority + 0.15, summary
    assert summary["learning_flag"] is None
