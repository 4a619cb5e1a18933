"""Real data: LoRA r=8 at the product's defaults learns SST-2 from the baseline's 2,000 rows.

One epoch, not the baseline's three: at one thread (a worker of the suite) each epoch over 2,000
rows takes about 33 s, and three took the test to 150 s (issue 45: no test over 90 s). The
three-epoch figure of ../shared/BASELINE.md's protocol (0.80 and above) is a bench's:
bench/SPEED.md (`bench/speed.py`, LoRA 0.821 ± 0.002 over seeds 0-2), rerun before and after the
stack change by `bench/stack.py --speed`. Measured for this test on an AVX2-only machine, one
thread: 0.787 (seed 0) and 0.775 (seed 1), about 70 s each, the learning-rate search (0.003)
included; the hand-written loop reaches 0.774 after three epochs at its fixed 5e-4.
"""

from __future__ import annotations

from pathlib import Path

from backend.run import run_training
from backend.training.config import TrainConfig


def test_lora_r8_learns_sst2_in_one_epoch_at_its_defaults(shared_data: Path, tmp_path: Path) -> None:
    cfg = TrainConfig(
        data=str(shared_data / "sst2" / "train.csv"),
        eval_data=str(shared_data / "sst2" / "dev.csv"),
        method="lora",
        method_config={"rank": 8},
        max_train_samples=2000,
        epochs=1,
        seed=0,
    )
    summary = run_training(cfg, tmp_path / "sst2-lora")
    assert summary["eval_rows"] == 872 and summary["train_rows"] == 2000
    # 872 rows: a 95% interval of about ±2.8 points; chance is 0.51 (the majority class)
    assert summary["accuracy"] >= 0.75, summary
    assert summary["lr_search_seconds"] > 0, "the learning rate was not searched (it is 'auto')"
