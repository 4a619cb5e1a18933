"""The doubt about a searched learning rate (issue 36): one sentence when the chosen rate is the
highest or lowest candidate (the method's default too, issue 51), or the best epoch came in the
first quarter of the epochs trained; and where a run's score is read, that sentence with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app import main as cli_main
from backend.training.lr_warning import lr_choice_warning
from tests.conftest import sentiment_rows, write_csv
from tests.tiny_models import TINY_BERT

RATES = (3e-4, 1e-3, 3e-3, 1e-2)  # a search's candidates (LoRA's before issue 36); 2e-3 is nearest 3e-3


def summary(
    chosen: float, best_epoch: int = 8, run: int = 10, method: str = "lora", rates: tuple[float, ...] = RATES,
    **search: Any,
) -> dict[str, Any]:  # fmt: skip
    candidates = [{"lr": lr, "eval_loss": 1.0, "diverged": False} for lr in rates]
    return {
        "method": method,
        "lr_search": {"chosen": chosen, "candidates": candidates, "inconclusive": False, **search},
        "best_epoch": best_epoch,
        "epochs": 19,
        "epochs_run": run,
    }


def test_the_highest_candidate_is_doubted_with_the_next_lower_one_named() -> None:
    warning = lr_choice_warning(summary(1e-2))
    assert (
        warning is not None
        and "highest rate searched (0.0003 to 0.01), which a short search favours" in warning
    )
    assert "compare a run at 0.003" in warning and "epoch" not in warning


def test_the_lowest_candidate_is_doubted_with_the_next_higher_one_named() -> None:
    warning = lr_choice_warning(summary(3e-4))
    assert warning is not None and "lowest rate searched" in warning and "compare a run at 0.001" in warning


def test_an_early_best_epoch_is_doubted_at_an_inner_rate() -> None:
    warning = lr_choice_warning(summary(3e-3, best_epoch=2, run=10))
    assert warning is not None and "best epoch came early (2 of 10 trained)" in warning
    assert "compare a run at 0.001" in warning and "searched" not in warning


def test_an_inner_rate_whose_best_epoch_came_late_is_not_doubted() -> None:
    assert lr_choice_warning(summary(3e-3, best_epoch=3, run=10)) is None
    assert lr_choice_warning(summary(1e-3, best_epoch=10, run=10)) is None
    # early stopping after 3 epochs without gain: best 2 of 5 trained is not "early"
    assert lr_choice_warning(summary(3e-3, best_epoch=2, run=5)) is None


def test_the_methods_default_at_an_edge_is_doubted_too() -> None:
    """Issue 51: P-tuning's default 3e-2 was the top of a grid of two; chosen, it lost 9 points
    in silence. The edge of the grid is the edge of what the search saw, default or not."""
    prefix = (1e-3, 3e-3, 1e-2, 3e-2)
    warning = lr_choice_warning(summary(3e-2, method="prefix", rates=prefix))
    assert warning is not None and "highest rate searched (0.001 to 0.03)" in warning


def test_a_grid_of_two_with_the_upper_one_chosen_is_doubted() -> None:
    """The issue's case: two candidates, the upper one (the method's default) chosen."""
    warning = lr_choice_warning(summary(3e-2, method="ptuning", rates=(1e-2, 3e-2)))
    assert warning is not None and "highest rate searched (0.01 to 0.03)" in warning
    assert "compare a run at 0.01" in warning
    lower = lr_choice_warning(summary(1e-2, method="ptuning", rates=(1e-2, 3e-2)))
    assert lower is not None and "lowest rate searched" in lower and "compare a run at 0.03" in lower


def test_no_search_or_an_inconclusive_one_is_not_doubted() -> None:
    assert lr_choice_warning({"lr_search": None, "best_epoch": 1, "epochs": 10}) is None
    assert lr_choice_warning(summary(1e-2, inconclusive=True)) is None


def test_a_real_run_carries_it_in_its_json_line_and_model_card(tmp_path: Path, capsys: Any) -> None:
    """IA3 on a toy task (tiny model) searches 3e-3 .. 3e-2; whatever it chooses, the last JSON line, the
    summary and the model card agree with the rule above."""
    data = write_csv(tmp_path / "train.csv", sentiment_rows(160, seed=1))
    out = tmp_path / "run"
    argv = ["train", "--data", str(data), "--model", TINY_BERT, "--method", "ia3", "--epochs", "4",
            "--max-length", "16", "--out", str(out)]  # fmt: skip
    assert cli_main(argv) in (0, None)
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "lr_choice_warning" in last
    expected = lr_choice_warning(last)
    assert last["lr_choice_warning"] == expected
    card = (out / "README.md").read_text()
    if expected:
        assert f"**Warning: {expected}**" in card
    else:
        assert "may not suit this run" not in card
