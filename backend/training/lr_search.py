"""Learning rate "auto": successive halving over a method's log-spaced candidates.

One learning rate does not fit every dataset: IA3 at 3e-3 learns SST-2 but stays at the
majority class on a 6-class task where 3e-2 reaches 0.93. So before a run, every
candidate trains briefly from the same initial weights on the same batches of the
*training* data, and is judged on a stratified slice held out from the training data
(the evaluation set is never read). The better half (lower held-out loss) trains on,
until one is left. The whole search gets about ``SEARCH_SHARE`` of the run's planned
training samples, held-out passes included (a forward pass costs ~1/3 of a step).

Held-out *loss* ranks the candidates rather than accuracy: after a few dozen steps many
candidates still predict the majority class, and only the loss shows which one moves.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from backend.data.batching import Encoded
from backend.data.stats import eval_indices
from backend.training.callbacks import Callback, TrainingCancelled
from backend.training.metrics import autocast, evaluate

SEARCH_SHARE = 0.12  # of the run's planned training samples; the ceiling is ~15%
ETA = 2  # successive halving keeps the better 1/ETA each round
HOLDOUT_FRACTION = 0.15
HOLDOUT_MIN, HOLDOUT_MAX = 32, 200
MIN_ROUND_STEPS = 8  # fewer steps leave every candidate at chance: tiny budgets overrun rather than guess
EVAL_COST = 1 / 3  # a forward pass relative to a training step, per row
WARMUP_SHARE = 0.1
MAX_EXTENSIONS = 2  # a round that tells nothing gets at most twice its steps again
MIN_LOSS_GAIN = 0.02  # "moved": 2% below the starting held-out loss
# Candidates train on quarter-size batches: a budget of a few hundred rows then buys each
# one 10-30 steps instead of 3-8, and the held-out loss only separates candidates once they
# have moved. Small batches are noisier, which if anything penalises the too-large rates
# that a short horizon otherwise favours.
SEARCH_BATCH_DIVISOR = 4
MIN_SEARCH_BATCH = 4


def search_batch_size(batch_size: int) -> int:
    return max(MIN_SEARCH_BATCH, batch_size // SEARCH_BATCH_DIVISOR)


def search_optimizer(params: list[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with the fused kernel: quarter-size batches mean 4x the optimizer steps, and the
    default per-tensor AdamW cost about a third of a full fine-tuning step on the CPU."""
    try:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)
    except RuntimeError:  # a device or dtype without the fused kernel
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


@dataclass
class Candidate:
    """One learning rate's fate in the search."""

    lr: float
    eval_loss: float = math.inf
    accuracy: float | None = None
    steps: int = 0
    rounds: int = 0
    diverged: bool = False


class Trial(Protocol):
    """A candidate's training state that can advance and be scored (model or probe head)."""

    def advance(self, steps: int, cancelled: Callable[[], bool]) -> bool:
        """Train ``steps`` more steps; False if the loss stopped being finite."""

    def score(self) -> tuple[float, float]:
        """(held-out loss, held-out accuracy)."""


@dataclass
class Schedule:
    """Steps per candidate in each round, and the held-out rows to judge them on."""

    round_steps: list[int]
    survivors: list[int]
    holdout_rows: int
    budget: float  # in the unit of the Costs it was planned with

    @property
    def total_steps(self) -> int:
        """Steps a candidate that survives every round trains for."""
        return sum(self.round_steps)


@dataclass(frozen=True)
class Costs:
    """What the search's pieces cost, in one unit (rows for probe heads, seconds for models)."""

    step: float  # one candidate's training step at the search batch size
    eval_row: float  # one held-out row's forward pass
    budget: float  # what the whole search may spend


def sample_costs(batch_size: int, planned_samples: int) -> Costs:
    """Costs counted in rows: a step is its batch, a forward pass about a third of a step."""
    return Costs(batch_size, EVAL_COST, max(1.0, SEARCH_SHARE * planned_samples))


def plan_schedule(n_candidates: int, train_rows: int, costs: Costs) -> Schedule:
    """Split the budget into successive-halving rounds and the held-out passes that judge them."""
    survivors = [n_candidates]
    while survivors[-1] > 1:
        survivors.append(math.ceil(survivors[-1] / ETA))
    survivors = survivors[:-1] or [1]
    evals = sum(survivors)
    # Held-out passes get at most 40% of the budget; fewer rows are a noisier but fair judge.
    wanted = min(HOLDOUT_MAX, max(HOLDOUT_MIN, round(HOLDOUT_FRACTION * train_rows)))
    affordable = int(0.4 * costs.budget / (evals * costs.eval_row))
    holdout = max(HOLDOUT_MIN, min(wanted, affordable, train_rows // 2))
    per_round = (costs.budget - evals * holdout * costs.eval_row) / len(survivors)
    steps = [max(MIN_ROUND_STEPS, int(per_round / n / costs.step)) for n in survivors]
    return Schedule(steps, survivors, holdout, round(costs.budget, 3))


def successive_halving(
    lrs: tuple[float, ...], make_trial: Callable[[float], Trial], schedule: Schedule, cb: Callback
) -> list[Candidate]:
    """Run the rounds; returns every candidate, the winner first.

    A round tells something only once some candidate has moved the held-out loss below where
    every candidate started: in the first few steps a good large rate often sits *above* the
    start (the new head overshoots) while a too-small one has not moved at all, and ranking
    then would keep the rates that learn nothing. So such a round is extended (the same extra
    steps for every candidate) up to MAX_EXTENSIONS times, spending more than the budget only
    when the budget was too small to tell.
    """
    candidates = [Candidate(lr) for lr in lrs]
    trials = {c.lr: make_trial(c.lr) for c in candidates}
    start_loss = trials[candidates[0].lr].score()[0]  # every candidate starts from these weights
    alive = list(candidates)
    for round_no, steps in enumerate(schedule.round_steps, 1):
        for extension in range(MAX_EXTENSIONS + 1):
            for cand in alive:
                _advance(cand, trials[cand.lr], steps, round_no, cb)
            alive.sort(key=lambda c: c.eval_loss)
            if alive[0].eval_loss < start_loss * (1 - MIN_LOSS_GAIN) or extension == MAX_EXTENSIONS:
                break
            cb.on_log(
                f"learning-rate search round {round_no}: no candidate is below the starting held-out "
                f"loss ({start_loss:.3f}) yet; {steps} more steps each"
            )
        cb.on_log(
            f"learning-rate search round {round_no}/{len(schedule.round_steps)} "
            f"({alive[0].steps} steps each): "
            + ", ".join(f"{c.lr:g} → {'diverged' if c.diverged else f'{c.eval_loss:.3f}'}" for c in alive)
        )
        if round_no < len(schedule.round_steps):
            keep = schedule.survivors[round_no]
            for dropped in alive[keep:]:
                trials.pop(dropped.lr, None)  # free its weights and optimizer state
            alive = alive[:keep]
    winner = alive[0]
    return [winner, *sorted((c for c in candidates if c is not winner), key=lambda c: c.lr)]


def _advance(cand: Candidate, trial: Trial, steps: int, round_no: int, cb: Callback) -> None:
    """Train one candidate ``steps`` more and score it (a diverged one stays diverged)."""
    if not cand.diverged:
        if trial.advance(steps, cb.should_cancel):
            cand.eval_loss, cand.accuracy = trial.score()
        else:
            cand.diverged, cand.eval_loss = True, math.inf
    cand.steps += steps
    cand.rounds = round_no


def holdout_split(labels: list[int], rows: int, seed: int) -> tuple[list[int], list[int]]:
    """(training indices, held-out indices): a stratified, seeded slice of ``rows`` rows."""
    held = eval_indices(labels, rows / len(labels), seed)
    held_set = set(held)
    return [i for i in range(len(labels)) if i not in held_set], held


def result_dict(
    candidates: list[Candidate], schedule: Schedule, seconds: float, train_rows: int
) -> dict[str, Any]:
    """What the job row, the log, training_config.json and the model card record."""
    winner = candidates[0]
    return {
        "chosen": winner.lr,
        "candidates": sorted((asdict(c) for c in candidates), key=lambda c: c["lr"]),
        "metric": "held-out loss (lower is better)",
        "round_steps": schedule.round_steps,
        "holdout_rows": schedule.holdout_rows,
        "train_rows": train_rows,
        "budget": schedule.budget,
        "seconds": round(seconds, 3),
    }


# ---------------------------------------------------------------- a model's trainable weights


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

    def score(self) -> tuple[float, float]:
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
    params: dict[str, torch.nn.Parameter] = field(init=False)
    initial: dict[str, torch.Tensor] = field(init=False)
    _order: list[list[int]] = field(init=False, default_factory=list)
    _stream: Iterator[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self._stream = batches_forever(len(self.train), self.batch_size, self.seed)
        self.params = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
        self.initial = {n: p.detach().cpu().clone() for n, p in self.params.items()}

    def step_seconds(self, batch_size: int) -> float:
        """Wall time of one training step at ``batch_size`` (the second of two: the first warms
        kernels up). Learning rate 0, so the weights do not move."""
        params = list(self.params.values())
        opt = search_optimizer(params, 0.0, 0.0)
        rows = next(batches_forever(len(self.train), batch_size, self.seed + 1))
        self.model.train()
        elapsed = 0.0
        for _ in range(2):
            started = time.perf_counter()
            with autocast(self.device):
                loss = self.model(**{k: v.to(self.device) for k, v in self.train.batch(rows).items()}).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
            opt.step()
            opt.zero_grad(set_to_none=True)
            elapsed = time.perf_counter() - started
        return elapsed

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
        opt = search_optimizer(params, trial.lr, self.weight_decay)
        if trial.optimizer_state is not None:
            opt.load_state_dict(trial.optimizer_state)
        self.model.train()
        finite = True
        for _ in range(steps):
            if cancelled():
                raise TrainingCancelled("cancelled during the learning-rate search")
            batch = self.train.batch(self._batch_indices(trial.done))
            for group in opt.param_groups:
                group["lr"] = trial.lr * min(1.0, (trial.done + 1) / self.warmup_steps)
            with autocast(self.device):
                loss = self.model(**{k: v.to(self.device) for k, v in batch.items()}).loss
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

    def score(self, trial: ModelTrial) -> tuple[float, float]:
        self._load(trial.weights)
        metrics = evaluate(self.model, self.holdout, self.label_names, self.device)
        return metrics["eval_loss"], metrics["accuracy"]


def measured_costs(search: ModelSearch, batch_size: int, planned_samples: int) -> Costs:
    """Costs in seconds, timed on this model and machine: a method that updates every weight
    pays more per optimizer step than one that trains a few vectors, and the budget is a
    share of the run's *time*, not of its rows."""
    full_step = search.step_seconds(batch_size)
    search_step = search.step_seconds(search.batch_size)
    planned_seconds = planned_samples / batch_size * full_step
    return Costs(search_step, EVAL_COST * full_step / batch_size, max(1e-3, SEARCH_SHARE * planned_seconds))


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
) -> dict[str, Any]:
    """Pick a learning rate for ``model`` from ``lrs`` using ``train`` only; the model's
    trainable weights are back at their initial values afterwards."""
    started = time.perf_counter()
    holdout_rows = min(HOLDOUT_MAX, max(HOLDOUT_MIN, round(HOLDOUT_FRACTION * len(train))), len(train) // 2)
    fit_idx, held_idx = holdout_split(train.labels, holdout_rows, seed)
    search = ModelSearch(
        model, train.subset(fit_idx), train.subset(held_idx), label_names, device,
        search_batch_size(batch_size), weight_decay, max_grad_norm, 1, seed,
    )  # fmt: skip
    try:
        schedule = plan_schedule(len(lrs), len(train), measured_costs(search, batch_size, planned_samples))
        if schedule.holdout_rows < len(held_idx):  # a tight budget judges on fewer rows
            search.holdout = search.holdout.subset(list(range(schedule.holdout_rows)))
        search.warmup_steps = max(1, round(WARMUP_SHARE * schedule.total_steps))
        cb.on_log(
            f"learning-rate search: {len(lrs)} candidates ({', '.join(f'{lr:g}' for lr in lrs)}), rounds of "
            f"{schedule.round_steps} steps of {search.batch_size} rows on {len(fit_idx)} training rows, "
            f"judged on {len(search.holdout)} held-out training rows (budget {schedule.budget:.0f} s)"
        )
        candidates = successive_halving(lrs, search.trial, schedule, cb)
    finally:
        search.restore_initial()
    return result_dict(candidates, schedule, time.perf_counter() - started, len(fit_idx))


def batches_forever(n: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """Seeded shuffled batches of ``range(n)``, epoch after epoch (for probe-head searches)."""
    epoch = 0
    while True:
        perm = np.random.default_rng(seed + epoch).permutation(n).tolist()
        yield from (perm[i : i + batch_size] for i in range(0, n, batch_size))
        epoch += 1
