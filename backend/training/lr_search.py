"""Learning rate "auto": successive halving over a method's log-spaced candidates.

One learning rate does not fit every dataset: IA3 at 3e-3 learns SST-2 but stays at the
majority class on a 6-class task where 3e-2 reaches 0.93. So before a run, every
candidate trains briefly from the same initial weights on the same batches of the
*training* data, and is judged on a stratified slice held out from the training data
(the evaluation set is never read). The better half (lower held-out loss) trains on,
until one is left. The whole search gets about ``SEARCH_SHARE`` of the run's planned
training samples, held-out passes included (a forward pass costs ~1/3 of a step).

Held-out *loss* ranks the candidates rather than accuracy: after a few dozen steps many
candidates still predict the majority class, and only the loss shows which one moves. It is
judged against the starting loss, not against the label prior's (what answering the class
frequencies scores): within the budget few candidates get below the prior on a 6-class set,
and on emotion that made the searches of full fine-tuning and LoRA inconclusive although their
ranking was clear (full fine-tuning then trained at 3e-5 and reached 0.751; bench/TASKS.md).

This module holds the search itself, shared by both kinds of trial: the budget arithmetic
(``Costs``, ``plan_schedule``), the rounds (``successive_halving``) and the held-out split.
A trial that trains a model's weights lives in ``backend.training.lr_search_model``; one
that trains a probe head on cached features, in ``backend.probing.heads``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from backend.data.sampling import eval_indices
from backend.training.callbacks import Callback
from backend.training.lr_search_noise import Score, keep_default_on_a_tie, moved, nearest

SEARCH_SHARE = 0.12  # of the run's planned training samples; the ceiling is ~15%
ETA = 2  # successive halving keeps the better 1/ETA each round
HOLDOUT_FRACTION = 0.15
HOLDOUT_MIN, HOLDOUT_MAX = 32, 200
MIN_ROUND_STEPS = 8  # fewer steps leave every candidate at chance: tiny budgets overrun rather than guess
EVAL_COST = 1 / 3  # a forward pass relative to a training step, per row
WARMUP_SHARE = 0.1
# A round that tells nothing gets its steps once more. Twice more (the earlier setting) let
# P-tuning's search on SST-2 spend 5x its budget and still tell nothing (93 s for 19 s).
MAX_EXTENSIONS = 1
# Candidates train on quarter-size batches: a budget of a few hundred rows then buys each
# one 10-30 steps instead of 3-8, and the held-out loss only separates candidates once they
# have moved. Small batches are noisier, which if anything penalises the too-large rates
# that a short horizon otherwise favours.
SEARCH_BATCH_DIVISOR = 4
MIN_SEARCH_BATCH = 4


def search_batch_size(batch_size: int) -> int:
    return max(MIN_SEARCH_BATCH, batch_size // SEARCH_BATCH_DIVISOR)


@dataclass
class Candidate:
    """One learning rate's fate in the search."""

    lr: float
    eval_loss: float = math.inf
    accuracy: float | None = None
    steps: int = 0
    rounds: int = 0
    evaluations: int = 0  # held-out passes that scored it (what the search's cost counts)
    diverged: bool = False
    inconclusive: bool = False  # won because no candidate moved, not on its score
    # the default, kept on a tie with the best: [that rate, mean per-row loss gap, its standard
    # error]; a list, as JSON gives it back (the summary and training_config.json then agree)
    tie_with: list[float] | None = None
    rows: np.ndarray | None = field(default=None, repr=False)  # per-row held-out losses


class Trial(Protocol):
    """A candidate's training state that can advance and be scored (model or probe head)."""

    def advance(self, steps: int, cancelled: Callable[[], bool]) -> bool:
        """Train ``steps`` more steps; False if the loss stopped being finite."""

    def score(self) -> Score:
        """Held-out loss, accuracy and per-row losses."""


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
    lrs: tuple[float, ...],
    make_trial: Callable[[float], Trial],
    schedule: Schedule,
    cb: Callback,
    prior: float | None = None,
) -> list[Candidate]:
    """Run the rounds; returns every candidate, the winner first.

    A round tells something only once some candidate has moved the held-out loss below where
    every candidate started: in the first few steps a good large rate often sits *above* the
    start (the new head overshoots) while a too-small one has not moved at all, and ranking
    then would keep the rates that learn nothing. So such a round is extended (the same extra
    steps for every candidate) up to MAX_EXTENSIONS times, spending more than the budget only
    when the budget was too small to tell.

    "Moved" is 2% below the start *and* below it beyond the noise (TIE_SE paired standard errors
    of the per-row losses): LoRA on SST-2 moved 0.70 to 0.686 at 3e-4 within the budget, by
    noise, and a search that counted that as a result took 3e-4.

    If even then no candidate has moved, the search stops there: it has learnt nothing, so
    the method's default (``prior``; the candidate nearest it) is taken, not a rank of noise.
    Ranking on noise picked 1e-3 for P-tuning on SST-2 (held-out loss 0.685 against a start
    of 0.693), whose run then sat at the majority class. Taking the largest stable rate
    instead (tried first) lost to the defaults on SST-2 for LoRA (1e-2: 0.775 against 0.825),
    prompt tuning (0.1: 0.649 against 0.739), adapters and full fine-tuning (bench/FORECAST.md's
    runs against bench/SPEED.md's). Without a prior, the largest stable rate.
    """
    candidates = [Candidate(lr) for lr in lrs]
    trials = {c.lr: make_trial(c.lr) for c in candidates}
    start = trials[candidates[0].lr].score()  # every candidate starts from these weights
    start_loss = start.loss
    alive = list(candidates)
    anchor = nearest(candidates, prior) if prior is not None else None
    for round_no, steps in enumerate(schedule.round_steps, 1):
        for extension in range(MAX_EXTENSIONS + 1):
            for cand in alive:
                _advance(cand, trials[cand.lr], steps, round_no, cb)
            alive.sort(key=lambda c: c.eval_loss)
            if any(moved(c, start) for c in alive) or extension == MAX_EXTENSIONS:
                break
            cb.on_log(
                f"learning-rate search round {round_no}: no candidate is below the starting held-out "
                f"loss ({start_loss:.3f}) yet; {steps} more steps each"
            )
        if round_no == 1 and not any(moved(c, start) for c in alive):
            return _inconclusive(candidates, start_loss, cb, prior)
        cb.on_log(
            f"learning-rate search round {round_no}/{len(schedule.round_steps)} "
            f"({alive[0].steps} steps each): "
            + ", ".join(f"{c.lr:g} → {'diverged' if c.diverged else f'{c.eval_loss:.3f}'}" for c in alive)
        )
        if round_no < len(schedule.round_steps):
            keep = schedule.survivors[round_no]
            dropped = [c for c in alive[keep:] if c is not anchor or c.diverged]  # the default trains on
            for c in dropped:
                trials.pop(c.lr, None)  # free its weights and optimizer state
            alive = [c for c in alive if c not in dropped]
    winner = keep_default_on_a_tie(alive, anchor, cb)
    return [winner, *sorted((c for c in candidates if c is not winner), key=lambda c: c.lr)]


def _inconclusive(
    candidates: list[Candidate], start_loss: float, cb: Callback, prior: float | None
) -> list[Candidate]:
    """No candidate moved the held-out loss: the one nearest the method's default wins (see
    above), else the largest that did not diverge."""
    stable = [c for c in candidates if not c.diverged] or candidates
    if prior is None:
        winner, why = max(stable, key=lambda c: c.lr), "the largest rate that did not diverge"
    else:
        winner = nearest(stable, prior)
        why = (
            "the method's default" if math.isclose(winner.lr, prior) else "the candidate nearest the default"
        )
    winner.inconclusive = True
    cb.on_log(
        f"learning-rate search: no candidate moved the held-out loss below its start ({start_loss:.3f}) "
        f"within the budget; taking {why}, {winner.lr:g}"
    )
    return [winner, *sorted((c for c in candidates if c is not winner), key=lambda c: c.lr)]


def _advance(cand: Candidate, trial: Trial, steps: int, round_no: int, cb: Callback) -> None:
    """Train one candidate ``steps`` more and score it (a diverged one stays diverged)."""
    if not cand.diverged:
        if trial.advance(steps, cb.should_cancel):
            scored = trial.score()
            cand.eval_loss, cand.accuracy, cand.rows = scored.loss, scored.accuracy, scored.rows
            cand.evaluations += 1
        else:
            cand.diverged, cand.eval_loss = True, math.inf
    cand.steps += steps
    cand.rounds = round_no


def spent(candidates: list[Candidate], schedule: Schedule, costs: Costs) -> float:
    """What the search cost, in the unit of ``costs``: every step it trained (extensions
    included) and every held-out pass, the one that scored the starting weights too."""
    passes = 1 + sum(c.evaluations for c in candidates)
    return costs.step * sum(c.steps for c in candidates) + costs.eval_row * schedule.holdout_rows * passes


def holdout_split(labels: list[int], rows: int, seed: int) -> tuple[list[int], list[int]]:
    """(training indices, held-out indices): a stratified, seeded slice of ``rows`` rows."""
    held = eval_indices(labels, rows / len(labels), seed)
    held_set = set(held)
    return [i for i in range(len(labels)) if i not in held_set], held


def result_dict(
    candidates: list[Candidate], schedule: Schedule, seconds: float, train_rows: int, cost_steps: float = 0.0
) -> dict[str, Any]:
    """What the job row, the log, training_config.json and the model card record
    (``cost_steps``: the search's cost in the run's training steps, where it is counted so)."""
    winner = candidates[0]
    return {
        "chosen": winner.lr,
        "candidates": sorted(
            ({k: v for k, v in asdict(c).items() if k != "rows"} for c in candidates), key=lambda c: c["lr"]
        ),
        "metric": "held-out loss (lower is better)",
        # True: no candidate moved the held-out loss, so the method's default (nearest) was taken
        "inconclusive": winner.inconclusive,
        "round_steps": schedule.round_steps,
        "holdout_rows": schedule.holdout_rows,
        "train_rows": train_rows,
        "budget": schedule.budget,
        "cost_steps": round(cost_steps, 2),
        "seconds": round(seconds, 3),
    }


def batches_forever(n: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """Seeded shuffled batches of ``range(n)``, epoch after epoch (for probe-head searches)."""
    epoch = 0
    while True:
        perm = np.random.default_rng(seed + epoch).permutation(n).tolist()
        yield from (perm[i : i + batch_size] for i in range(0, n, batch_size))
        epoch += 1
