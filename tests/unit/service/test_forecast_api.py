"""The forecast before launch on real registered data and the real default model (no run:
these are the first-guess figures; tests/jobs/test_api.py checks the calibrated ones)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from service.api import Workbench
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import make_settings


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    return Workbench(make_settings(tmp_path_factory.mktemp("forecast")))


def test_a_first_forecast_adds_up_and_says_it_is_a_guess(bench: Workbench, tmp_path: Path) -> None:
    dataset = bench.register_dataset(write_csv(tmp_path / "tiny.csv", sentiment_rows(80)))
    fc = bench.forecast(dataset["id"], "lora", {}, epochs=4, lr="auto")
    assert fc["epochs"] == 4 and fc["fits"] and not fc["advice"]
    assert fc["total_seconds"] == pytest.approx(
        4 * (fc["seconds_per_epoch"] + fc["eval_seconds"]) + fc["search_seconds"]
    )
    assert fc["search_seconds"] > 0 and "first guess" in fc["text"] and "learning-rate search" in fc["text"]
    fixed = bench.forecast(dataset["id"], "lora", {}, epochs=4, lr=1e-3)
    assert fixed["search_seconds"] == 0  # a typed learning rate: no search to pay for
    longer = bench.forecast(dataset["id"], "lora", {}, epochs=8, lr=1e-3)
    assert longer["total_seconds"] == pytest.approx(2 * fixed["total_seconds"], rel=0.01)


def test_a_run_that_will_not_fit_is_warned_with_the_setting_to_change(
    bench: Workbench, tmp_path: Path
) -> None:
    """4,096 rows of ~500 tokens in batches of 4,096 at 512 tokens: activations alone need far
    more than this machine's RAM; the same data in batches of 8 at 64 tokens fits."""
    path = tmp_path / "long.csv"
    words = " ".join(["the film was long and slow but the acting was good"] * 45)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "label"])
        w.writerows((f"{i} {words}", "pos" if i % 2 else "neg") for i in range(4096))
    dataset = bench.register_dataset(path)
    big = bench.forecast(dataset["id"], "lora", {}, epochs=1, lr=1e-3, batch_size=4096, max_length=512)
    assert not big["fits"] and big["peak_mb"] > big["available_mb"]
    assert "Batch size (now 4096)" in big["advice"] and "May not fit" in big["text"]
    small = bench.forecast(dataset["id"], "lora", {}, epochs=1, lr=1e-3, batch_size=8, max_length=64)
    assert small["fits"] and small["peak_mb"] < big["peak_mb"] / 50
    assert small["seconds_per_epoch"] < big["seconds_per_epoch"]  # 64 tokens a row, not 512
