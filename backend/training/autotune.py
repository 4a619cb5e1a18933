"""Settings sized from the user's data: epochs "auto", and the "did not learn" verdict.

A fixed epoch count gives a 360-row dataset ~35 optimizer steps and a 100k-row one
~10,000; neither is what the person wanted. "auto" asks for at least ``MIN_STEPS``
optimizer steps, whole epochs, at most ``MAX_EPOCHS``; early stopping (patience) ends
a run that has stopped improving, and the best epoch is kept either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from backend.data.prepare import PreparedData
from backend.methods import registry
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.config import AUTO, TrainConfig
from backend.training.lr_search import SEARCH_SHARE

# Optimizer steps an "auto" run gets at least (when MAX_EPOCHS allows). 600, not 300: at 300
# (10 epochs of 1,000 rows) every method but full fine-tuning and the probe was still improving
# in its last epoch on emotion (prompt tuning +1.5 points an epoch; bench/tasks_runs.jsonl's
# histories); early stopping ends the runs that have stopped improving, so only those pay.
MIN_STEPS = 600
# The learning-rate search is sized from the run's first SEARCH_BASIS_STEPS steps (at least one
# epoch), not from its whole plan: early stopping ends many runs well before their last epoch,
# and a search sized from 600 steps then cost a third of what the run trained.
SEARCH_BASIS_STEPS = 300
# The ceiling on what the search may cost against the run it chose for. The search is
# sized from the plan, but early stopping can end a small set's run after 1 + patience epochs
# (~110 steps on 1,000 rows, where the search costs the time of ~32), and the search was then up
# to 36% of the run (bench/TASKS.md at 3cc3627). So early stopping waits until the run has
# trained the search's cost / SEARCH_CEILING steps; the best epoch is kept either way.
SEARCH_CEILING = 0.15
FEW_STEPS = 150  # below this a run often ends at the majority class: the Train tab warns
MAX_EPOCHS = 30  # tiny sets: more passes over a few dozen rows mostly memorise
NO_LEARNING_MARGIN = 1e-9  # "at or below" the majority class, float noise aside


@dataclass(frozen=True)
class EpochPlan:
    """How long a run trains: the numbers the Train tab shows before launch."""

    epochs: int
    steps_per_epoch: int
    auto: bool

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch

    def describe(self) -> str:
        how = "auto" if self.auto else "as set"
        return (
            f"{self.epochs} epoch{'s' if self.epochs != 1 else ''} × {self.steps_per_epoch} steps "
            f"= {self.total_steps} optimizer steps ({how})"
        )


def steps_per_epoch(train_rows: int, batch_size: int, grad_accum: int = 1) -> int:
    """Optimizer steps in one pass over ``train_rows`` (the last batch may be short)."""
    return max(1, math.ceil(math.ceil(train_rows / batch_size) / grad_accum))


def auto_epochs(train_rows: int, batch_size: int, grad_accum: int = 1) -> int:
    """Whole epochs giving at least MIN_STEPS optimizer steps, between 1 and MAX_EPOCHS."""
    per_epoch = steps_per_epoch(train_rows, batch_size, grad_accum)
    return max(1, min(MAX_EPOCHS, math.ceil(MIN_STEPS / per_epoch)))


def search_basis_samples(plan: EpochPlan, train_rows: int) -> int:
    """Training rows the learning-rate search's budget is a share of (see SEARCH_BASIS_STEPS)."""
    epochs = min(plan.epochs, max(1, math.ceil(SEARCH_BASIS_STEPS / plan.steps_per_epoch)))
    return epochs * train_rows


def plan_epochs(cfg: TrainConfig, train_rows: int) -> EpochPlan:
    """The epoch plan for ``cfg`` on ``train_rows`` rows; a typed epoch count always wins."""
    per_epoch = steps_per_epoch(train_rows, cfg.batch_size, cfg.grad_accum)
    if cfg.epochs == AUTO:
        return EpochPlan(auto_epochs(train_rows, cfg.batch_size, cfg.grad_accum), per_epoch, True)
    return EpochPlan(cfg.effective_epochs, per_epoch, False)


def train_rows_after_holdout(rows: int, eval_fraction: float, has_eval_file: bool) -> int:
    """Training rows left once the evaluation split is held out (as backend.data.prepare does it)."""
    return rows if has_eval_file else rows - max(1, math.ceil(round(eval_fraction * rows, 9)))


MIN_LOSS_GAIN = 0.01  # an equal score counts as progress only with 1% lower eval loss


def score(metrics: dict[str, Any]) -> float:
    """An evaluation's primary metric (``score``; a history from before tasks has accuracy)."""
    return float(metrics["score"] if "score" in metrics else metrics["accuracy"])


def better(new: dict[str, Any], best: dict[str, Any] | None) -> bool:
    """Best epoch: highest score (the task's primary metric), ties broken by lower eval loss."""
    if best is None:
        return True
    return (score(new), -new["eval_loss"]) > (score(best), -best["eval_loss"])


def epochs_without_improvement(history: list[dict[str, Any]]) -> int:
    """Evaluations since the last one that improved the score (or, at an equal score, the loss).

    Read from the history alone, so a resumed run counts exactly as the original did.
    """
    best: dict[str, Any] | None = None
    last = 0
    for i, h in enumerate(history, 1):
        if best is None or _improves(h, best):
            best, last = h, i
    return len(history) - last


def patience_exhausted(history: list[dict[str, Any]], patience: int, majority: float) -> bool:
    """Early stopping: ``patience`` evaluations in a row without improvement, counted only once
    the run has beaten the task's baseline (``majority``: its score on the eval set, e.g. the
    majority class's accuracy).

    Before that the run has not begun to learn: prompt-style methods can sit at the majority
    class for a few epochs before they move (P-tuning on emotion stopped at epoch 5 of 10
    there), and stopping them then guarantees the failure the "did not learn" flag reports.
    """
    if not patience or not history:
        return False
    if max(score(h) for h in history) <= majority + NO_LEARNING_MARGIN:
        return False
    return epochs_without_improvement(history) >= patience


def min_steps_before_stop(search: dict[str, Any] | None) -> int:
    """The step early stopping waits for after a learning-rate search (0: none, or one recorded
    before its cost was: a resumed old run stops as it did)."""
    cost = (search or {}).get("cost_steps")
    return math.ceil(cost / SEARCH_CEILING) if cost else 0


def deferred_stop_note(epoch: int, step: int, min_steps: int) -> str:
    return (
        f"epoch {epoch}: no improvement for the patience, but early stopping waits until step "
        f"{min_steps} (now {step}) so that the learning-rate search costs at most "
        f"{SEARCH_CEILING:.0%} of the run"
    )


def early_stop_note(epoch: int, stale: int, patience: int, best: dict[str, Any] | None) -> str:
    return (
        f"early stopping after epoch {epoch}: no improvement for {stale} epochs "
        f"(patience {patience}); keeping epoch {best['epoch'] if best else '?'}"
    )


def _improves(new: dict[str, Any], best: dict[str, Any]) -> bool:
    if score(new) != score(best):
        return score(new) > score(best)
    return new["eval_loss"] < best["eval_loss"] * (1 - MIN_LOSS_GAIN)


def learning_verdict(
    best_score: float,
    baseline: dict[str, Any],
    cfg: TrainConfig,
    plan: EpochPlan,
    lr_searched: bool,
    task: Task | None = None,
) -> str | None:
    """None for a run that beat the task's baseline, else the flag with a likely cause and a fix."""
    task = task or tasks.get(None)
    if best_score > score(baseline) + NO_LEARNING_MARGIN:
        return None
    causes: list[str] = []
    if not lr_searched:
        causes.append(
            f"the learning rate {cfg.effective_lr:g} may not suit this method and data: "
            "set the learning rate to auto, or try 10x larger and smaller"
        )
    if plan.total_steps < FEW_STEPS:
        causes.append(f"{plan.total_steps} optimizer steps may be too few: set epochs to auto or raise them")
    # The last cause is the one the four shared datasets showed: on RTE's sentence pairs even
    # full fine-tuning of the 22M default encoder ends 3 points above the majority (bench/TASKS.md).
    causes.append(
        "the labels may not follow from the text the model sees (check the column mapping and "
        "max length), or this method may be too weak here: compare with LoRA or full fine-tuning; "
        "if they barely learn either, the task needs a larger base model"
    )
    return f"did not learn: at or below {task.baseline_text(baseline)}. Likely causes: {'; '.join(causes)}."


def describe_search(result: dict[str, Any] | None) -> str:
    """One line for logs and the model card: candidates, their scores, the choice."""
    if not result:
        return ""
    scores = ", ".join(
        f"{c['lr']:g}: {'diverged' if c['diverged'] else format(c['eval_loss'], '.3f')}"
        for c in result["candidates"]
    )
    how = "chosen by search"
    tie = next((c["tie_with"] for c in result["candidates"] if c["lr"] == result["chosen"]), None)
    if tie:
        how = f"the method's default, kept by the search (as good as {tie[0]:g} within the noise)"
    if result.get("inconclusive"):
        how = "taken as the method's default (or nearest candidate): the search moved no held-out loss"
    cost = ""
    if floor := min_steps_before_stop(result):
        cost = (
            f"; it cost the time of {result['cost_steps']:g} run steps, so early stopping waits "
            f"until step {floor}"
        )
    return (
        f"learning rate {result['chosen']:g} {how} (held-out loss per candidate: {scores}; "
        f"{result['seconds']:.1f}s on {result['train_rows']} training rows, judged on "
        f"{result['holdout_rows']} held-out training rows{cost})"
    )


@dataclass(frozen=True)
class RunLength:
    """How far a run actually went (early stopping may end it before the plan)."""

    epochs_run: int
    stopped_early: int | None
    steps: int


def autotune_summary(
    cfg: TrainConfig,
    requested: dict[str, Any],
    plan: EpochPlan,
    search: dict[str, Any] | None,
    search_seconds: float,
    train_seconds: float,
    length: RunLength,
) -> dict[str, Any]:
    """What "auto" decided and what it cost, for the summary, the model card and the job row.

    The search's share is measured against the rest of the run (its time without the search).
    """
    rest = max(train_seconds - search_seconds, 1e-9)
    return {
        "lr": cfg.effective_lr,
        "epochs": plan.epochs,
        "epochs_run": length.epochs_run,
        "stopped_early": length.stopped_early,
        "total_steps": length.steps,
        "requested": requested,
        "lr_search": search,
        "lr_search_seconds": round(search_seconds, 3) if search else None,
        "lr_search_share": round(search_seconds / rest, 4) if search else None,
    }


def learning_check(
    best_score: float, data: PreparedData, cfg: TrainConfig, plan: EpochPlan, lr_searched: bool
) -> dict[str, Any]:
    """The task's trivial baseline on the run's eval set and the "did not learn" flag.
    Stored under the task's ``baseline_key`` (classification's ``majority_baseline`` is what
    runs, pages and exports from before tasks read)."""
    baseline = data.task.baseline(data.train.labels, data.eval.labels, data.label_names)
    return {
        data.task.baseline_key: baseline,
        "learning_flag": learning_verdict(best_score, baseline, cfg, plan, lr_searched, data.task),
    }


def describe_plan(cfg: TrainConfig, rows: int, has_eval_file: bool) -> dict[str, Any]:
    """What a launch with ``cfg`` on a dataset of ``rows`` usable rows will do, before it runs."""
    train_rows = train_rows_after_holdout(rows, cfg.eval_fraction, has_eval_file)
    plan = plan_epochs(cfg, train_rows)
    spec = registry.get(cfg.method)
    patience = cfg.early_stopping_patience
    stop = f", stopping early after {patience} epochs without improvement" if patience else ""
    text = f"**Plan:** {plan.describe()} on {train_rows:,} training rows{stop}"
    candidates: tuple[float, ...] = ()
    share = 0.0  # the search's budget against the planned training time
    if cfg.lr == AUTO:
        candidates = spec.learning_rates(cfg.method_settings())
        share = SEARCH_SHARE * search_basis_samples(plan, train_rows) / max(1, plan.epochs * train_rows)
        text += (
            " · **learning rate auto:** a short search over "
            f"{', '.join(f'{lr:g}' for lr in candidates)} on the training data picks it "
            f"(adds about {share:.0%} to the planned training time)"
        )
    else:
        text += f" · learning rate {cfg.effective_lr:g}"
    if plan.total_steps < FEW_STEPS:
        text += f" · ⚠ only {plan.total_steps} optimizer steps: small runs often end at the majority class"
    return {
        "train_rows": train_rows,
        "epochs": plan.epochs,
        "steps_per_epoch": plan.steps_per_epoch,
        "total_steps": plan.total_steps,
        "lr_candidates": list(candidates),
        "search_share": round(share, 4),
        "text": text,
    }
