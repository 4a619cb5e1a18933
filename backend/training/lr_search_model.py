"""The learning-rate search on a model's trainable weights (see ``backend.training.lr_search``).

Every candidate is a copy of the trainable weights and optimizer state kept on the CPU; one
model is shared by all of them, each candidate's weights loaded in to train or score and
taken out again. The budget is a share of the run's planned steps, a search step counted at a
fixed fraction of a run step (more for a method that updates every weight, whose optimizer
step costs more): a timed fraction made the chosen rate vary from launch to launch.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from backend.data.batching import SEARCH_MEGA_BATCHES, Encoded
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.callbacks import Callback, TrainingCancelled
from backend.training.lr_search import (
    EVAL_COST,
    HOLDOUT_FRACTION,
    HOLDOUT_MAX,
    HOLDOUT_MIN,
    SEARCH_SHARE,
    WARMUP_SHARE,
    Costs,
    batches_forever,
    holdout_split,
    plan_schedule,
    result_dict,
    search_batch_size,
    spent,
    successive_halving,
)
from backend.training.lr_search_noise import Score
from backend.training.metrics import inference
from backend.training.runtime import adamw, autocast


@dataclass
class ModelTrial:
    """One candidate's copy of the trainable weights and optimizer state, on the CPU.

    Only one candidate is in the model at a time: its weights are loaded in, trained,
    and taken out again, so the search needs one model however many candidates it runs.
    """

    lr: float
    owner: ModelSearch
    weights: dict[str, torch.Tensor]
    optimizer_state: dict[str, Any] | None = None
    done: int = 0

    def advance(self, steps: int, cancelled: Callable[[], bool]) -> bool:
        return self.owner.advance(self, steps, cancelled)

    def score(self) -> Score:
        return self.owner.score(self)


@dataclass
class ModelSearch:
    """The shared parts of every candidate: model, data, batches, device, settings."""

    model: Any
    train: Encoded
    holdout: Encoded
    label_names: list[str]
    device: torch.device
    batch_size: int
    weight_decay: float
    max_grad_norm: float
    warmup_steps: int
    seed: int
    precision: str = "fp32"
    group_by_length: bool = True
    lr_scales: dict[str, float] = field(default_factory=dict)  # the method's (MethodSpec.lr_scales)
    task: Task = field(default_factory=lambda: tasks.get(None))  # classification unless given
    params: dict[str, torch.nn.Parameter] = field(init=False)
    initial: dict[str, torch.Tensor] = field(init=False)
    _order: list[list[int]] = field(init=False, default_factory=list)
    _stream: Iterator[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self._stream = self._batches_forever()
        self.params = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
        self.initial = {n: p.detach().cpu().clone() for n, p in self.params.items()}

    def _batches_forever(self) -> Iterator[list[int]]:
        """Epoch after epoch of the run's own batch order (length-grouped when the run is)."""
        if not self.group_by_length:
            yield from batches_forever(len(self.train), self.batch_size, self.seed)
            return
        for epoch in itertools.count():
            yield from self.train.index_batches(
                self.batch_size, True, self.seed + epoch, True, SEARCH_MEGA_BATCHES
            )

    def trial(self, lr: float) -> ModelTrial:
        return ModelTrial(lr, self, {n: t.clone() for n, t in self.initial.items()})

    def restore_initial(self) -> None:
        """Put the weights the search started from back (the real run starts there too)."""
        self._load(self.initial)

    def _load(self, weights: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for name, p in self.params.items():
                p.copy_(weights[name])

    def _batch_indices(self, k: int) -> list[int]:
        """The k-th batch of the search: every candidate sees the same batches in the same order."""
        while len(self._order) <= k:
            self._order.append(next(self._stream))
        return self._order[k]

    def advance(self, trial: ModelTrial, steps: int, cancelled: Callable[[], bool]) -> bool:
        self._load(trial.weights)
        params = list(self.params.values())
        opt = adamw(self.params.items(), trial.lr, self.weight_decay, self.lr_scales)
        if trial.optimizer_state is not None:
            opt.load_state_dict(trial.optimizer_state)
        self.model.train()
        finite = True
        for _ in range(steps):
            if cancelled():
                raise TrainingCancelled("cancelled during the learning-rate search")
            batch = self.train.batch(self._batch_indices(trial.done))
            for group in opt.param_groups:
                group["lr"] = trial.lr * group["lr_scale"] * min(1.0, (trial.done + 1) / self.warmup_steps)
            with autocast(self.device, self.precision):
                loss = self.task.train_loss(self.model, {k: v.to(self.device) for k, v in batch.items()})
            trial.done += 1
            if not torch.isfinite(loss):
                finite = False
                break
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
        trial.weights = {n: p.detach().cpu().clone() for n, p in self.params.items()}
        trial.optimizer_state = opt.state_dict()
        return finite and all(torch.isfinite(t).all() for t in trial.weights.values())

    def score(self, trial: ModelTrial) -> Score:
        self._load(trial.weights)
        run = inference(self.device, self.precision)
        losses, primary = self.task.search_score(self.model, self.holdout, self.label_names, run)
        return Score(float(losses.mean()), primary, losses)


# A search step (a quarter batch) against a run step, fixed rather than timed. Timed on this
# 2-core CPU the ratio ranged 0.25-0.71 across methods and datasets (small batches use the cores
# less well, and the optimizer step is paid per step) and moved between launches of the same
# run, and with it the schedule and the rate chosen: a seeded run must choose the same rate. The
# measured ratios: 0.30-0.50 for methods that train a few weights, 0.50-0.71 for full
# fine-tuning, whose optimizer updates every weight; the measured time is reported per run.
SEARCH_STEP_COST = 0.4  # ... for a method that trains a small part of the model
OPTIMIZER_STEP_COST = 0.2  # ... plus this times the trained share of the weights


def planned_costs(search: ModelSearch, batch_size: int, planned_samples: int) -> Costs:
    """Costs in the run's own training steps: a search step ``SEARCH_STEP_COST`` and more
    (see above), a held-out row a third of a row's training step, the budget SEARCH_SHARE of
    the run's planned steps."""
    trained = sum(p.numel() for p in search.params.values())
    share = trained / max(1, sum(p.numel() for p in search.model.parameters()))
    step = min(1.0, SEARCH_STEP_COST + OPTIMIZER_STEP_COST * share)
    planned_steps = planned_samples / batch_size
    return Costs(round(step, 4), EVAL_COST / batch_size, max(1.0, SEARCH_SHARE * planned_steps))


def search_model_lr(
    model: Any,
    train: Encoded,
    lrs: tuple[float, ...],
    *,
    planned_samples: int,
    label_names: list[str],
    device: torch.device,
    batch_size: int,
    weight_decay: float,
    max_grad_norm: float,
    seed: int,
    cb: Callback,
    precision: str = "fp32",
    group_by_length: bool = True,
    prior: float | None = None,
    lr_scales: dict[str, float] | None = None,
    task: Task | None = None,
) -> dict[str, Any]:
    """Pick a learning rate for ``model`` from ``lrs`` using ``train`` only; the model's
    trainable weights are back at their initial values afterwards. ``prior``: the method's
    default, taken when the search cannot tell the candidates apart."""
    started = time.perf_counter()
    task = task or tasks.get(None)
    holdout_rows = min(HOLDOUT_MAX, max(HOLDOUT_MIN, round(HOLDOUT_FRACTION * len(train))), len(train) // 2)
    fit_idx, held_idx = holdout_split(task.strata(train.labels), holdout_rows, seed)
    search = ModelSearch(
        model, train.subset(fit_idx), train.subset(held_idx), label_names, device,
        search_batch_size(batch_size), weight_decay, max_grad_norm, 1, seed,
        "fp32" if precision == "fp16" else precision,  # fp16 needs loss scaling: not worth it here
        group_by_length, lr_scales or {}, task,
    )  # fmt: skip
    try:
        costs = planned_costs(search, batch_size, planned_samples)
        schedule = plan_schedule(len(lrs), len(train), costs)
        if schedule.holdout_rows < len(held_idx):  # a tight budget judges on fewer rows
            search.holdout = search.holdout.subset(list(range(schedule.holdout_rows)))
        search.warmup_steps = max(1, round(WARMUP_SHARE * schedule.total_steps))
        cb.on_log(
            f"learning-rate search: {len(lrs)} candidates ({', '.join(f'{lr:g}' for lr in lrs)}), rounds of "
            f"{schedule.round_steps} steps of {search.batch_size} rows on {len(fit_idx)} training rows, "
            f"judged on {len(search.holdout)} held-out training rows (budget: the time of "
            f"{schedule.budget:.0f} of the run's first {planned_samples / batch_size:.0f} steps; a search "
            f"step counted as {costs.step:g} of a run step)"
        )
        candidates = successive_halving(lrs, search.trial, schedule, cb, prior)
    finally:
        search.restore_initial()
    seconds = time.perf_counter() - started
    return result_dict(candidates, schedule, seconds, len(fit_idx), spent(candidates, schedule, costs))
