"""Real data: LoRA r=8 on 2,000 SST-2 training rows must reach 0.80 dev accuracy."""

from __future__ import annotations

from pathlib import Path

from backend.run import run_training
from backend.training.config import TrainConfig


def test_lora_r8_reaches_080_on_sst2(shared_data: Path, tmp_path: Path) -> None:
    cfg = TrainConfig(
        data=str(shared_data / "sst2" / "train.csv"),
        eval_data=str(shared_data / "sst2" / "dev.csv"),
        method="lora",
        method_config={"rank": 8},
        max_train_samples=2000,
        epochs=3,
        seed=0,
    )
    summary = run_training(cfg, tmp_path / "sst2-lora")
    assert summary["eval_rows"] == 872 and summary["train_rows"] == 2000
    assert summary["accuracy"] >= 0.80, summary
