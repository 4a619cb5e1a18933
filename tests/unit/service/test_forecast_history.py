"""The figures the forecast takes from finished runs' summaries."""

from __future__ import annotations

import pytest

from service.forecast_history import eval_throughput, overhead_seconds, search_share


def summary(**fields: object) -> dict[str, object]:
    base = {"epoch_seconds": [10.0, 12.0], "epochs": 4, "eval_seconds": [2.0, 2.0], "eval_tokens": 8000,
            "train_seconds": 60.0, "lr_search_seconds": 11.0}  # fmt: skip
    return {**base, **fields}


def test_each_figure_is_the_median_of_the_runs_that_recorded_it() -> None:
    runs = [summary(), summary(lr_search_seconds=22.0), summary(lr_search_seconds=None), {}]
    # planned training time = mean epoch (11 s) x 4 planned epochs = 44 s
    assert search_share(runs) == pytest.approx(((11 / 44) + (22 / 44)) / 2)
    assert eval_throughput(runs) == pytest.approx(8000 * 2 / 4.0)
    # outside search, epochs and evaluations: 60 - 11 - 22 - 4 = 23 s; 60 - 22 - 22 - 4 = 12 s;
    # 60 - 0 - 22 - 4 = 34 s (no search)
    assert overhead_seconds(runs) == pytest.approx(23.0)


def test_nothing_recorded_gives_nothing() -> None:
    assert search_share([{}]) is None and eval_throughput([]) is None and overhead_seconds([{}]) is None
    assert eval_throughput([summary(eval_seconds=[])]) is None  # a run from before evaluation was timed
