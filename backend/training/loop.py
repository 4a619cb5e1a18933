"""The training loop: a base model + method trained through its forward pass.

No database and no UI here: progress goes out through a :class:`Callback`; the run
folder is written by ``backend.run`` from the :class:`RunOutcome` returned here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from backend.data.batching import Encoded
from backend.errors import ConfigError
from backend.forecast import eval_padded_tokens
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training import checkpoint
from backend.training.autotune import (
    RunLength,
    autotune_summary,
    better,
    deferred_stop_note,
    early_stop_note,
    epochs_without_improvement,
    learning_check,
    min_steps_before_stop,
    patience_exhausted,
)
from backend.training.callbacks import Callback, EpochInfo, StepInfo, TrainingCancelled
from backend.training.config import TrainConfig
from backend.training.metrics import evaluate, predict_probs
from backend.training.outcome import RunContext, RunOutcome, run_summary
from backend.training.runtime import adamw, autocast, cpu_setup, peak_gpu_mb, pick_device, resolve_precision
from backend.training.setup import build_model, checkpointing_on, count_run_parameters, resolve_auto
from backend.training.throughput import Throughput, computed_params, throughput_summary
from backend.training.top_layers import LowerLayerCache, cut_index


class Fitter:
    """The epoch/step loop for every method that trains through the model's forward."""

    def __init__(
        self,
        model: Any,
        cfg: TrainConfig,
        train: Encoded,
        evals: Encoded,
        label_names: list[str],
        device: torch.device,
        callback: Callback,
        task: Task | None = None,
    ) -> None:
        self.model, self.cfg, self.train, self.evals = model, cfg, train, evals
        self.label_names, self.device, self.cb = label_names, device, callback
        self.task = task = task or tasks.get(None)
        # early stopping waits until the run beats this (see autotune.patience_exhausted)
        self.majority = task.baseline(train.labels, evals.labels, label_names)["score"]
        self.precision = resolve_precision(cfg.precision, device, cfg.quant)
        # fp16 (CUDA without bf16) needs loss scaling; bf16 has fp32's range and does not.
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = adamw(model.named_parameters(), cfg.effective_lr, cfg.weight_decay, cfg.lr_scales)
        self.steps_per_epoch = math.ceil(train.num_batches(cfg.batch_size) / cfg.grad_accum)
        self.total_steps = self.steps_per_epoch * cfg.effective_epochs
        warmup = int(cfg.warmup_ratio * self.total_steps)
        from transformers import get_linear_schedule_with_warmup

        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, warmup, self.total_steps)
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self.best: dict[str, Any] | None = None
        self.best_state: dict[str, torch.Tensor] | None = None
        self.epoch_seconds: list[float] = []
        self.eval_seconds: list[float] = []  # each epoch's evaluation (the forecast calibrates on it)
        self.pad_to: int | None = None  # fixed-length padding, only to benchmark against it
        self.stopped_early: int | None = None  # the epoch early stopping ended the run after
        self.min_stop_steps, self.stop_deferred = 0, False  # early stopping waits for this step
        self.resolved: dict[str, Any] = {}  # what "auto" chose; checkpoints keep it for resume
        self.tokens = Throughput()
        # rows -> the batch's training loss; the top-layers option swaps in one over cached states
        self.forward: Callable[[list[int]], torch.Tensor] = self._forward
        self.eval_forward: Callable[[list[int]], Any] | None = None
        self.top_cut: int | None = None  # train the layers from here up over cached lower ones

    def run(self, start_epoch: int = 1, checkpoint_dir: Path | None = None) -> None:
        self.model.train()
        start = time.perf_counter()
        for epoch in range(start_epoch, self.cfg.effective_epochs + 1):
            t0 = time.perf_counter()
            if epoch == start_epoch:
                self._cache_lower_layers()  # counted in the first epoch's time: it is its cost
            train_loss = self._epoch(epoch, start)
            self.epoch_seconds.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            metrics = evaluate(
                self.model,
                self.evals,
                self.label_names,
                self.device,
                self.precision,
                self.eval_forward,
                self.task,
            )
            self.eval_seconds.append(time.perf_counter() - t0)
            is_best = better(metrics, self.best)
            if is_best:
                self.best = {**metrics, "epoch": epoch}
                self.best_state = checkpoint.trainable_state(self.model)
            self.history.append({"epoch": epoch, "train_loss": train_loss, **metrics})
            self.cb.on_epoch(
                EpochInfo(epoch, self.cfg.effective_epochs, self.step, metrics, train_loss, is_best)
            )
            self.cb.on_log(f"epoch {epoch}: {self.task.epoch_text(metrics)}")
            if checkpoint_dir is not None:
                checkpoint.save(checkpoint_dir, self, epoch)
                self.cb.on_checkpoint(epoch, str(checkpoint_dir))
            if self._patience_exhausted(epoch):
                break

    def _patience_exhausted(self, epoch: int) -> bool:
        """Early stopping: ``early_stopping_patience`` evaluations in a row without improvement,
        and not before ``min_stop_steps`` (see autotune.min_steps_before_stop)."""
        patience, history = self.cfg.early_stopping_patience, self.history
        if epoch >= self.cfg.effective_epochs or not patience_exhausted(history, patience, self.majority):
            return False
        if self.step < self.min_stop_steps:
            if not self.stop_deferred:  # said once: every later epoch would say it again
                self.stop_deferred = True
                self.cb.on_log(deferred_stop_note(epoch, self.step, self.min_stop_steps))
            return False
        self.stopped_early = epoch
        self.cb.on_log(early_stop_note(epoch, epochs_without_improvement(history), patience, self.best))
        return True

    def _cache_lower_layers(self) -> None:
        """With "train top layers": run the frozen layers below the cut once, for the training
        and the evaluation rows, and train and evaluate on their cached outputs from then on."""
        if self.top_cut is None:
            return
        started = time.perf_counter()
        with autocast(self.device, self.precision):
            train = LowerLayerCache.build(self.model, self.train, self.top_cut, self.device)
            evals = LowerLayerCache.build(self.model, self.evals, self.top_cut, self.device)
        lengths = self.train.lengths

        def forward(rows: list[int]) -> Any:
            self.tokens.add_lengths([lengths[i] for i in rows])
            with autocast(self.device, self.precision):
                return train.forward(self.model, rows, self.task.train_loss)

        self.forward = forward
        self.eval_forward = lambda rows: evals.forward(self.model, rows)
        self.cb.on_log(
            f"cached the hidden states entering layer {self.top_cut} for {len(train)} training and "
            f"{len(evals)} evaluation rows in {time.perf_counter() - started:.1f} s; "
            "only the layers above train"
        )

    def _forward(self, rows: list[int]) -> torch.Tensor:
        batch = self.train.batch(rows, self.pad_to)
        self.tokens.add(batch)
        with autocast(self.device, self.precision):
            return self.task.train_loss(self.model, {k: v.to(self.device) for k, v in batch.items()})

    def _epoch(self, epoch: int, start: float) -> float:
        cfg, losses = self.cfg, []
        batches = self.train.index_batches(cfg.batch_size, True, cfg.seed + epoch, cfg.group_by_length)
        n_batches = self.train.num_batches(cfg.batch_size)
        t_last, seen, tokens_before = time.perf_counter(), 0, self.tokens.real
        for i, rows in enumerate(batches, 1):
            if self.cb.should_cancel():
                raise TrainingCancelled(f"cancelled at step {self.step}")
            batch_loss = self.forward(rows)  # the task's training loss (Task.train_loss)
            if not torch.isfinite(batch_loss):
                raise ConfigError(
                    f"training diverged: the loss became {batch_loss.item()} at step {self.step + 1} "
                    f"(epoch {epoch}); try a lower learning rate (now {cfg.effective_lr:g})"
                )
            loss = batch_loss / cfg.grad_accum
            (self.scaler.scale(loss) if self.scaler else loss).backward()
            losses.append(batch_loss.item())
            seen += len(rows)
            if i % cfg.grad_accum and i != n_batches:
                continue
            self._optimizer_step()
            now = time.perf_counter()
            elapsed = max(now - t_last, 1e-9)
            self.cb.on_step(
                StepInfo(
                    self.step,
                    self.total_steps,
                    epoch,
                    float(np.mean(losses[-cfg.grad_accum :])),
                    self.scheduler.get_last_lr()[0],
                    seen / elapsed,
                    now - start,
                    (self.tokens.real - tokens_before) / elapsed,
                )
            )
            t_last, seen, tokens_before = now, 0, self.tokens.real
        return float(np.mean(losses)) if losses else float("nan")

    def _optimizer_step(self) -> None:
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)  # clip the true gradients, not the scaled ones
        torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1


def chosen_task(ctx: RunContext, model: Any, device: torch.device) -> Task:
    """The run's task with its "auto" settings chosen on the held-out training rows' outputs
    (``Task.choose_settings``), logged; the task as it is when no row was held out."""
    data = ctx.data
    if data.holdout is None:
        return data.task
    held = Encoded(ctx.tokenizer, data.holdout, ctx.cfg.max_length, data.task)
    task = data.task.choose_settings(
        held.truth(), predict_probs(model, held, device, task=data.task), data.label_names
    )
    ctx.cb.on_log(f"chose {task.settings_dict()} on {len(held)} held-out training rows")
    return task


def run_loop(ctx: RunContext) -> RunOutcome:
    """Train a model through its forward pass (every method but the cached-feature probe)."""
    cfg, data, cb = ctx.cfg, ctx.data, ctx.cb
    model = build_model(
        cfg, ctx.info, data.label_names, ctx.tokenizer.pad_token_id, data.task, data.train.labels
    )
    device = pick_device(cfg.device) if cfg.quant == "none" else next(model.parameters()).device
    if warning := cpu_setup(model, device, resolve_precision(cfg.precision, device, cfg.quant)):
        cb.on_log(warning)
    train_enc = Encoded(ctx.tokenizer, data.train, cfg.max_length, data.task)
    eval_enc = Encoded(ctx.tokenizer, data.eval, cfg.max_length, data.task)
    requested = {"lr": cfg.lr, "epochs": cfg.epochs}
    search_started = time.perf_counter()
    cfg, plan, search = resolve_auto(
        cfg, model, train_enc, data.label_names, device, cb, ctx.resume_from, data.task
    )
    search_seconds = time.perf_counter() - search_started if search and not ctx.resume_from else 0.0
    fitter = Fitter(model, cfg, train_enc, eval_enc, data.label_names, device, cb, data.task)
    fitter.top_cut = cut_index(ctx.info.num_layers, getattr(cfg.method_settings(), "top_layers", 0))
    fitter.resolved = {"lr": cfg.lr, "epochs": cfg.epochs, "lr_search": search}
    fitter.min_stop_steps = min_steps_before_stop(search)  # a resumed run: its recorded search
    trainable, total = count_run_parameters(ctx, model)
    cb.on_start(
        {
            "trainable_params": trainable,
            "total_params": total,
            "total_steps": fitter.total_steps,
            "total_epochs": plan.epochs,
            "device": str(device),
            "train_rows": len(train_enc),
            "eval_rows": len(eval_enc),
            "lr": cfg.effective_lr,
        }
    )
    start_epoch = checkpoint.load(ctx.resume_from, fitter) + 1 if ctx.resume_from else 1
    fitter.run(start_epoch, ctx.checkpoint_dir)
    if fitter.best_state is not None:
        model.load_state_dict(fitter.best_state, strict=False)
    train_seconds = time.perf_counter() - ctx.started
    task = chosen_task(ctx, model, device)  # "auto" settings chosen on held-out training rows
    # The final predictions run in fp32, as the exported weights will (the reload check
    # compares them to 1e-5); a reduced-precision run reports these, not its bf16 epoch score
    # (nor one scored by the task's settings before they were chosen).
    probs = predict_probs(model, eval_enc, device, task=task)
    best = fitter.best or {}
    if (fitter.precision != "fp32" or task is not data.task) and best:
        best = {**best, **evaluate(model, eval_enc, data.label_names, device, task=task, outputs=probs)}
    per_epoch = round(float(np.mean(fitter.epoch_seconds)), 3) if fitter.epoch_seconds else None
    summary = {
        **run_summary(
            replace(ctx, cfg=cfg),
            best,
            device=str(device),
            trainable=trainable,
            total=total,
            train_seconds=train_seconds,
            seconds_per_epoch=per_epoch,
            train_rows=len(train_enc),
            eval_rows=len(eval_enc),
            peak_gpu=peak_gpu_mb(device),
        ),
        **autotune_summary(
            cfg,
            requested,
            plan,
            search,
            search_seconds,
            train_seconds,
            RunLength(len(fitter.history), fitter.stopped_early, fitter.step),
        ),
        **learning_check(best["score"], data, cfg, plan, search is not None),
        "precision": fitter.precision,
        "gradient_checkpointing": checkpointing_on(model),
        "group_by_length": cfg.group_by_length,
        "epoch_seconds": [round(t, 3) for t in fitter.epoch_seconds],
        "eval_seconds": [round(t, 3) for t in fitter.eval_seconds],
        # the longest padded batch: what the activation memory peaked with (the forecast's fit)
        "longest_tokens": max(train_enc.lengths, default=0),
        "eval_tokens": round(eval_padded_tokens(eval_enc.lengths, len(eval_enc), cfg.max_length)),
        **throughput_summary(
            fitter.tokens,
            sum(fitter.epoch_seconds),
            computed_params(model, fitter.top_cut),
            trainable,
            device.type,
            fitter.precision,
        ),
    }
    return RunOutcome(cfg, summary, best, fitter.history, probs, model=model, task=task)
