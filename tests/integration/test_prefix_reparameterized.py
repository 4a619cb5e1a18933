"""Real data: prefix tuning through its MLP (Li & Liang's reparameterization) must learn.

With one learning rate for the MLP and the new head, every such run on the four shared sets
ended at the majority class; the MLP now learns at a fraction of the head's rate
(``backend.methods.prefix.lr_scales``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from backend.methods import registry
from backend.run import run_training
from backend.training.config import TrainConfig


def test_reparameterized_prefix_learns_emotion_at_its_default_rate(shared_data: Path, tmp_path: Path) -> None:
    # 600 of the 2,000 test rows (seeded) are enough for a margin of 0.15: evaluated on all of
    # them after each epoch, the test took 124 s on the fp32 path of a busy 2-core machine. The
    # default rate typed (no search) and 600 training rows: at 1,000 rows and "auto" it still took
    # 100 s at one thread on an AVX2 machine (search 16 s, 29 s an epoch); now 59 s, 0.517
    # against a majority of 0.34 (issue 45: no test over 90 s).
    eval_rows = pd.read_csv(shared_data / "emotion" / "test.csv").sample(n=600, random_state=0)
    eval_rows.to_csv(tmp_path / "test-600.csv", index=False)
    cfg = TrainConfig(
        data=str(shared_data / "emotion" / "train.csv"),
        eval_data=str(tmp_path / "test-600.csv"),
        method="prefix",
        method_config={"reparameterize": True},
        max_train_samples=600,
        lr=registry.get("prefix").default_lr,
        max_length=64,
        epochs=2,
        seed=0,
    )
    summary = run_training(cfg, tmp_path / "prefix-mlp")
    majority = summary["majority_baseline"]["accuracy"]  # 0.35: six classes, "joy" the most
    assert summary["accuracy"] >= majority + 0.15, summary
    assert summary["learning_flag"] is None
