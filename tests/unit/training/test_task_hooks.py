"""The task decides how a run trains and is judged (issue 46): the training loop and the
learning-rate search backpropagate ``Task.train_loss``, evaluate through ``Task.evaluate`` and
judge candidates by ``Task.search_score``, also over cached lower layers. A task that overrides
a hook is seen to be called, with the batches the run trains on; its answer is what the run
records. LoRA on the tiny random BERT: these are mechanics, not figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from backend.catalogue import load_tokenizer, model_info
from backend.data.batching import Encoded
from backend.tasks import registry
from backend.tasks.base import Inference
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data
from backend.training.loop import Fitter
from backend.training.lr_search_model import search_model_lr
from backend.training.setup import build_model
from tests.tiny_models import TINY_BERT

LABELS = type(registry.get("classification"))


class Watched(LABELS):  # type: ignore[misc, valid-type]
    """The label task, with each hook counted and its answers marked."""

    def __init__(self, loss_scale: float = 1.0) -> None:
        self.loss_scale = loss_scale
        self.batches: list[int] = []
        self.evaluations = 0
        self.searched = 0

    def train_loss(self, model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        self.batches.append(len(batch["labels"]))
        return super().train_loss(model, batch) * self.loss_scale

    def evaluate(
        self, model: Any, enc: Any, label_names: list[str], run: Inference, outputs: Any = None
    ) -> Any:
        self.evaluations += 1
        return {**super().evaluate(model, enc, label_names, run, outputs), "watched": self.evaluations}

    def search_score(self, model: Any, enc: Any, label_names: list[str], run: Inference) -> Any:
        self.searched += 1
        losses, score = super().search_score(model, enc, label_names, run)
        return losses, score


def fitter(data: Path, task: Watched, epochs: int = 2) -> Fitter:
    cfg = TrainConfig(
        data=str(data), model=TINY_BERT, method="lora", epochs=epochs, batch_size=8, max_length=16,
        lr=None, early_stopping_patience=0, max_train_samples=24, device="cpu",
    )  # fmt: skip
    prepared = load_data(cfg)
    info = model_info(cfg.model)
    tokenizer = load_tokenizer(info)
    torch.manual_seed(0)
    model = build_model(cfg, info, prepared.label_names, tokenizer.pad_token_id)
    train = Encoded(tokenizer, prepared.train, cfg.max_length)
    evals = Encoded(tokenizer, prepared.eval, cfg.max_length)
    return Fitter(model, cfg, train, evals, prepared.label_names, torch.device("cpu"), Callback(), task)


def trained(fit: Fitter) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in fit.model.named_parameters() if p.requires_grad}


def test_the_loop_trains_on_the_tasks_loss_and_records_its_evaluation(tiny_csv: Path) -> None:
    task = Watched()
    fit = fitter(tiny_csv, task)
    fit.run()
    assert task.batches == [8, 8, 8] * 2  # every batch of both epochs, and nothing else
    assert task.evaluations == 2 and [h["watched"] for h in fit.history] == [1, 2]
    assert fit.best is not None and "watched" in fit.best


def test_the_tasks_loss_is_what_moves_the_weights(tiny_csv: Path) -> None:
    """A task whose loss is zero trains nothing but weight decay: LoRA's B starts at zero, and
    decays to zero, so it stays exactly zero; with the model's own loss it moves."""
    moved = {}
    for scale in (0.0, 1.0):
        fit = fitter(tiny_csv, Watched(scale), epochs=1)
        fit.run()
        b = [p for n, p in trained(fit).items() if "lora_B" in n]
        moved[scale] = max(float(p.abs().max()) for p in b)
    assert moved[0.0] == 0.0 and moved[1.0] > 0.0


def test_the_cached_lower_layers_train_on_the_tasks_loss(tiny_csv: Path) -> None:
    task = Watched()
    fit = fitter(tiny_csv, task, epochs=1)
    fit.top_cut = 1  # the tiny BERT has two layers: the top one trains over cached states
    fit.run()
    assert task.batches == [8, 8, 8]


def test_the_learning_rate_search_judges_candidates_by_the_tasks_criterion(tiny_csv: Path) -> None:
    task = Watched()
    fit = fitter(tiny_csv, task)
    found = search_model_lr(
        fit.model, fit.train, (1e-4, 1e-2), planned_samples=48, label_names=fit.label_names,
        device=fit.device, batch_size=8, weight_decay=0.0, max_grad_norm=1.0, seed=0, cb=Callback(),
        task=task,
    )  # fmt: skip
    assert task.searched >= 2 and task.batches  # each candidate judged, and trained by the task's loss
    assert found["chosen"] in (1e-4, 1e-2)
