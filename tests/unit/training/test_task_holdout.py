"""A task's "auto" settings chosen on held-out training rows (issue 46: the multi-label
threshold's contract): the run holds out the rows its task asks for, never trains on them,
hands their outputs to ``Task.choose_settings`` after training, and scores, reports and saves by
the task it chose, with the training loop and with the probe. A task of the test's own (the
label task with a setting chosen from the held-out outputs) on the tiny random BERT."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.artifacts.save import save_run
from backend.catalogue import load_tokenizer, model_info
from backend.data.prepare import PreparedData, with_holdout
from backend.errors import DataError
from backend.knobs import knob
from backend.probing.run import run_probe
from backend.tasks import registry
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data
from backend.training.loop import run_loop
from backend.training.outcome import RunContext
from tests.tiny_models import TINY_BERT

LABELS = type(registry.get("classification"))
HELD = 6
SEEN: list[tuple[int, tuple[int, ...]]] = []  # what choose_settings was handed, per call


@dataclasses.dataclass(frozen=True)
class Margin:
    margin: float | str = knob("auto", "Margin", "A number, or auto: chosen on held-out rows.")


class Chooses(LABELS):  # type: ignore[misc, valid-type]
    """The label task with a setting chosen on held-out rows: the mean probability of the
    second class there (a stand-in for a threshold)."""

    settings_cls = Margin
    settings = Margin()
    exports = ("weights",)  # its key is the label task's: the card would reload that task

    def holdout_rows(self, train_rows: int) -> int:
        return HELD if self.settings.margin == "auto" else 0

    def choose_settings(self, true: np.ndarray, outputs: Any, label_names: list[str]) -> Any:
        SEEN.append((len(true), tuple(np.asarray(outputs).shape)))
        return self.configured({"margin": round(float(np.asarray(outputs)[:, 1].mean()), 4)})


def prepared(tiny_csv: Path, method: str, rows: int = 30) -> tuple[TrainConfig, PreparedData]:
    cfg = TrainConfig(
        data=str(tiny_csv), model=TINY_BERT, method=method, epochs=1, batch_size=8, max_length=16,
        lr=None, max_train_samples=rows, device="cpu",
    )  # fmt: skip
    return cfg, dataclasses.replace(load_data(cfg), task=Chooses())


@pytest.mark.parametrize("method", ["lora", "probe"])
def test_settings_are_chosen_on_rows_the_run_never_trained_on(
    tiny_csv: Path, tmp_path: Path, method: str
) -> None:
    cfg, data = prepared(tiny_csv, method)
    held = with_holdout(data, cfg.seed)
    assert held.holdout is not None and len(held.holdout) == HELD
    assert len(held.train) == len(data.train) - HELD
    kept = {*held.train.texts}
    assert not kept & {*held.holdout.texts} - {*data.eval.texts}  # no held-out row is trained on
    info = model_info(TINY_BERT)
    runner = run_loop if method == "lora" else run_probe
    SEEN.clear()
    outcome = runner(RunContext(cfg, held, info, load_tokenizer(info), Callback(), time.perf_counter()))
    assert SEEN == [(HELD, (HELD, 2))]  # once, after training, with the held-out rows' outputs
    chosen = outcome.task
    assert chosen is not None and isinstance(chosen.settings.margin, float)
    assert outcome.summary["train_rows"] == len(held.train)
    out = tmp_path / "run"
    save_run(
        out, outcome, info=info, tokenizer=load_tokenizer(info), data=dataclasses.replace(held, task=chosen)
    )
    assert json.loads((out / "workbench.json").read_text())["task_config"] == {
        "margin": chosen.settings.margin
    }


def test_a_task_that_holds_out_nothing_leaves_the_data_as_it_is(tiny_csv: Path) -> None:
    cfg, data = prepared(tiny_csv, "lora")
    fixed = dataclasses.replace(data, task=Chooses().configured({"margin": 0.5}))
    assert with_holdout(fixed, cfg.seed) is fixed
    plain = dataclasses.replace(data, task=registry.get("classification"))
    assert with_holdout(plain, cfg.seed) is plain


def test_holding_out_every_training_row_is_one_clear_error(tiny_csv: Path) -> None:
    cfg, data = prepared(tiny_csv, "lora", rows=HELD)
    with pytest.raises(DataError, match=f"{HELD} training rows leave none to train on"):
        with_holdout(data, cfg.seed)
