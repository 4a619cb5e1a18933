"""Training probe heads on cached features: the learning-rate search and the epoch loop."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from backend.methods import registry
from backend.methods.probe import Config
from backend.methods.probe_head import ProbeHead
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.autotune import better, patience_exhausted
from backend.training.callbacks import Callback, EpochInfo, StepInfo, TrainingCancelled
from backend.training.config import TrainConfig
from backend.training.lr_search import (
    WARMUP_SHARE,
    batches_forever,
    holdout_split,
    plan_schedule,
    result_dict,
    sample_costs,
    search_batch_size,
    successive_halving,
)
from backend.training.lr_search_noise import Score, score_probs


class HeadTrial:
    """One learning-rate candidate for a probe head (see backend.training.lr_search)."""

    def __init__(self, lr: float, x: torch.Tensor, y: torch.Tensor, held: tuple[torch.Tensor, np.ndarray],
                 pcfg: Config, cfg: TrainConfig, label_names: list[str], warmup: int,
                 batch_size: int, task: Task) -> None:  # fmt: skip
        torch.manual_seed(cfg.seed)  # every candidate starts from the same head
        self.head = ProbeHead(x.shape[1], outputs_of(task, label_names), pcfg.head, pcfg.hidden_size)
        task.start_head(self.head, y.tolist())
        self.task = task
        self.opt = torch.optim.AdamW(self.head.parameters(), lr=lr, weight_decay=cfg.weight_decay)
        self.lr, self.x, self.y, self.held, self.cfg = lr, x, y, held, cfg
        self.label_names, self.warmup, self.done = label_names, warmup, 0
        self.batches = batches_forever(len(y), batch_size, cfg.seed)

    def advance(self, steps: int, cancelled: Callable[[], bool]) -> bool:
        self.head.train()
        for _ in range(steps):
            for group in self.opt.param_groups:
                group["lr"] = self.lr * min(1.0, (self.done + 1) / self.warmup)
            idx = next(self.batches)
            loss = self.task.loss(self.head(self.x[idx]), self.y[idx])
            self.done += 1
            if not torch.isfinite(loss):
                return False
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.head.parameters(), self.cfg.max_grad_norm)
            self.opt.step()
        return True

    def score(self) -> Score:
        self.head.eval()
        with torch.no_grad():
            return score_probs(self.held[1], self.task.outputs(self.head(self.held[0])).numpy(), self.task)


def search_head_lr(
    x: torch.Tensor, y: torch.Tensor, pcfg: Config, cfg: TrainConfig, label_names: list[str], epochs: int,
    cb: Callback, task: Task | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The learning-rate search on cached features: training rows only, as for models."""
    started = time.perf_counter()
    lrs = registry.get(cfg.method).learning_rates(pcfg)
    batch_size = search_batch_size(cfg.batch_size)
    schedule = plan_schedule(len(lrs), len(y), sample_costs(batch_size, epochs * len(y)))
    task = task or tasks.get(None)
    fit, held = holdout_split(task.strata(y.tolist()), schedule.holdout_rows, cfg.seed)
    warmup = max(1, round(WARMUP_SHARE * schedule.total_steps))

    def trial(lr: float) -> HeadTrial:
        held_out = (x[held], y[held].numpy())
        return HeadTrial(lr, x[fit], y[fit], held_out, pcfg, cfg, label_names, warmup, batch_size, task)

    candidates = successive_halving(lrs, trial, schedule, cb, registry.get(cfg.method).default_lr)
    return result_dict(candidates, schedule, time.perf_counter() - started, len(fit))


class HeadFit:
    """The epoch loop of one probe head, with the same schedule and early stopping as models."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, pcfg: Config, cfg: TrainConfig,
                 label_names: list[str], cb: Callback | None, task: Task) -> None:  # fmt: skip
        from transformers import get_linear_schedule_with_warmup  # deferred: slow to import

        torch.manual_seed(cfg.seed)
        self.head = ProbeHead(x.shape[1], outputs_of(task, label_names), pcfg.head, pcfg.hidden_size)
        task.start_head(self.head, y.tolist())
        self.task = task
        self.opt = torch.optim.AdamW(
            self.head.parameters(), lr=cfg.effective_lr, weight_decay=cfg.weight_decay
        )
        self.x, self.y, self.cfg, self.cb = x, y, cfg, cb
        self.total_steps = cfg.effective_epochs * math.ceil(len(y) / cfg.batch_size)
        warmup = int(cfg.warmup_ratio * self.total_steps)
        self.sched = get_linear_schedule_with_warmup(self.opt, warmup, self.total_steps)
        self.step, self.start = 0, time.perf_counter()

    def epoch(self, epoch: int) -> float:
        """One pass over the rows in a seeded order; returns the mean training loss."""
        cfg, n = self.cfg, len(self.y)
        self.head.train()
        order = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed + epoch))
        losses, t_last = [], time.perf_counter()
        for i in range(0, n, cfg.batch_size):
            if self.cb is not None and self.cb.should_cancel():
                raise TrainingCancelled(f"cancelled at step {self.step}")
            idx = order[i : i + cfg.batch_size]
            loss = self.task.loss(self.head(self.x[idx]), self.y[idx])
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.head.parameters(), cfg.max_grad_norm)
            self.opt.step()
            self.sched.step()
            self.step += 1
            losses.append(loss.item())
            if self.cb is not None:
                now = time.perf_counter()
                speed = len(idx) / max(now - t_last, 1e-9)
                lr = self.sched.get_last_lr()[0]
                self.cb.on_step(
                    StepInfo(self.step, self.total_steps, epoch, loss.item(), lr, speed, now - self.start)
                )
                t_last = now
        return float(np.mean(losses))


def train_head(
    x: torch.Tensor,
    y: torch.Tensor,
    xe: torch.Tensor,
    ye: np.ndarray,
    pcfg: Config,
    cfg: TrainConfig,
    label_names: list[str],
    cb: Callback | None,
    task: Task | None = None,
) -> tuple[ProbeHead, dict[str, Any], list[dict[str, Any]]]:
    """Train one probe head on features; returns the best-epoch head, its metrics, history.

    ``cfg`` holds numbers here ("auto" was resolved by the caller); early stopping as in
    the model loop.
    """
    task = task or tasks.get(None)
    fit = HeadFit(x, y, pcfg, cfg, label_names, cb, task)
    majority = task.baseline(y.tolist(), ye.tolist(), label_names)["score"]
    best, best_state, history = None, None, []
    for epoch in range(1, cfg.effective_epochs + 1):
        train_loss = fit.epoch(epoch)
        metrics = evaluate_head(fit.head, xe, ye, label_names, task)
        is_best = better(metrics, best)
        if is_best:
            best = {**metrics, "epoch": epoch}
            best_state = {k: v.clone() for k, v in fit.head.state_dict().items()}
        history.append({"epoch": epoch, "train_loss": train_loss, **metrics})
        if cb is not None:
            cb.on_epoch(EpochInfo(epoch, cfg.effective_epochs, fit.step, metrics, train_loss, is_best))
        if patience_exhausted(history, cfg.early_stopping_patience, majority):
            break
    fit.head.load_state_dict(best_state)
    return fit.head, best, history


@torch.no_grad()
def evaluate_head(
    head: ProbeHead, xe: torch.Tensor, ye: np.ndarray, label_names: list[str], task: Task | None = None
) -> dict[str, Any]:
    head.eval()
    task = task or tasks.get(None)
    return task.metrics(ye, task.outputs(head(xe)).numpy(), label_names)


def outputs_of(task: Task, label_names: list[str]) -> int:
    """The head's outputs: one per class, one for a score."""
    return int(task.model_kwargs(label_names)["num_labels"])
