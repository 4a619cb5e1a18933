"""One training run: data + base model + method -> metrics stream + artifacts.

No database and no UI here: progress goes out through a :class:`Callback`.
"""

from __future__ import annotations

import json
import math
import random
import resource
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from backend import checkpoint, export
from backend.autotune import (
    EpochPlan,
    RunLength,
    autotune_summary,
    better,
    describe_search,
    epochs_without_improvement,
    learning_check,
    plan_epochs,
)
from backend.batching import Encoded
from backend.callbacks import Callback, EpochInfo, StepInfo, TrainingCancelled
from backend.data import PreparedData, prepare
from backend.errors import ConfigError
from backend.evaluation import autocast, evaluate, predict_probs
from backend.lr_search import search_model_lr
from backend.methods import registry
from backend.methods.base import BuildContext
from backend.models import ModelInfo, load_classifier, load_tokenizer, model_info
from backend.params import count, count_parameters
from backend.train_config import AUTO, TrainConfig, validate


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(pref: str) -> torch.device:
    if pref == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(pref)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load_data(cfg: TrainConfig) -> PreparedData:
    return prepare(
        cfg.data,
        cfg.eval_data,
        text_column=cfg.text_column,
        text_pair_column=cfg.text_pair_column,
        label_column=cfg.label_column,
        eval_fraction=cfg.eval_fraction,
        seed=cfg.seed,
        drop_invalid=cfg.drop_invalid,
        max_train_samples=cfg.max_train_samples,
    )


def trainable_state(model: Any) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}


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
    ) -> None:
        self.model, self.cfg, self.train, self.evals = model, cfg, train, evals
        self.label_names, self.device, self.cb = label_names, device, callback
        params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.effective_lr, weight_decay=cfg.weight_decay)
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
        self.pad_to: int | None = None  # fixed-length padding, only to benchmark against it
        self.stopped_early: int | None = None  # the epoch early stopping ended the run after
        self.resolved: dict[str, Any] = {}  # what "auto" chose; checkpoints keep it for resume

    def run(self, start_epoch: int = 1, checkpoint_dir: Path | None = None) -> None:
        self.model.train()
        start = time.perf_counter()
        for epoch in range(start_epoch, self.cfg.effective_epochs + 1):
            t0 = time.perf_counter()
            train_loss = self._epoch(epoch, start)
            self.epoch_seconds.append(time.perf_counter() - t0)
            metrics = evaluate(self.model, self.evals, self.label_names, self.device)
            is_best = better(metrics, self.best)
            if is_best:
                self.best, self.best_state = {**metrics, "epoch": epoch}, trainable_state(self.model)
            self.history.append({"epoch": epoch, "train_loss": train_loss, **metrics})
            self.cb.on_epoch(
                EpochInfo(epoch, self.cfg.effective_epochs, self.step, metrics, train_loss, is_best)
            )
            self.cb.on_log(
                f"epoch {epoch}: accuracy {metrics['accuracy']:.4f} "
                f"macro-F1 {metrics['macro_f1']:.4f} eval loss {metrics['eval_loss']:.4f}"
            )
            if checkpoint_dir is not None:
                checkpoint.save(checkpoint_dir, self, epoch)
                self.cb.on_checkpoint(epoch, str(checkpoint_dir))
            if self._patience_exhausted(epoch):
                break

    def _patience_exhausted(self, epoch: int) -> bool:
        """Early stopping: ``early_stopping_patience`` evaluations in a row without improvement."""
        patience = self.cfg.early_stopping_patience
        stale = epochs_without_improvement(self.history)
        if not patience or stale < patience or epoch >= self.cfg.effective_epochs:
            return False
        self.stopped_early = epoch
        self.cb.on_log(
            f"early stopping after epoch {epoch}: no improvement for {stale} epochs "
            f"(patience {patience}); keeping epoch {self.best['epoch'] if self.best else '?'}"
        )
        return True

    def _epoch(self, epoch: int, start: float) -> float:
        cfg, losses = self.cfg, []
        batches = self.train.batches(cfg.batch_size, shuffle=True, seed=cfg.seed + epoch, pad_to=self.pad_to)
        t_last, seen = time.perf_counter(), 0
        for i, batch in enumerate(batches, 1):
            if self.cb.should_cancel():
                raise TrainingCancelled(f"cancelled at step {self.step}")
            with autocast(self.device):
                out = self.model(**{k: v.to(self.device) for k, v in batch.items()})
            if not torch.isfinite(out.loss):
                raise ConfigError(
                    f"training diverged: the loss became {out.loss.item()} at step {self.step + 1} "
                    f"(epoch {epoch}); try a lower learning rate (now {cfg.effective_lr:g})"
                )
            (out.loss / cfg.grad_accum).backward()
            losses.append(out.loss.item())
            seen += len(batch["labels"])
            if i % cfg.grad_accum and i != self.train.num_batches(cfg.batch_size):
                continue
            torch.nn.utils.clip_grad_norm_(
                [p for p in self.model.parameters() if p.requires_grad], cfg.max_grad_norm
            )
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step += 1
            now = time.perf_counter()
            self.cb.on_step(
                StepInfo(
                    self.step,
                    self.total_steps,
                    epoch,
                    float(np.mean(losses[-cfg.grad_accum :])),
                    self.scheduler.get_last_lr()[0],
                    seen / max(now - t_last, 1e-9),
                    now - start,
                )
            )
            t_last, seen = now, 0
        return float(np.mean(losses)) if losses else float("nan")


def build_model(
    cfg: TrainConfig, info: ModelInfo, label_names: list[str], pad_token_id: int | None = None
) -> Any:
    spec = registry.get(cfg.method)
    base = load_classifier(info, label_names, cfg.quant, pad_token_id)
    model = spec.build(base, cfg.method_settings(), BuildContext(info=info, label_names=label_names))
    if cfg.quant == "none":
        model.to(pick_device(cfg.device))
    return model


def resolve_auto(
    cfg: TrainConfig,
    model: Any,
    train_enc: Encoded,
    label_names: list[str],
    device: torch.device,
    cb: Callback,
    resume_from: Path | None,
) -> tuple[TrainConfig, EpochPlan, dict[str, Any] | None]:
    """Turn "auto" epochs and learning rate into numbers (a typed value always wins).

    A resumed run takes the numbers its checkpoint recorded, so it never searches twice.
    """
    plan = plan_epochs(cfg, len(train_enc))
    resolved = checkpoint.resolved_settings(resume_from) if resume_from else None
    if resolved is not None:
        plan = EpochPlan(int(resolved["epochs"]), plan.steps_per_epoch, plan.auto)
        return replace(cfg, epochs=plan.epochs, lr=resolved["lr"]), plan, resolved.get("lr_search")
    search = None
    if cfg.lr == AUTO:
        search = search_model_lr(
            model,
            train_enc,
            registry.get(cfg.method).learning_rates(cfg.method_settings()),
            planned_samples=plan.epochs * len(train_enc),
            label_names=label_names,
            device=device,
            batch_size=cfg.batch_size,
            weight_decay=cfg.weight_decay,
            max_grad_norm=cfg.max_grad_norm,
            seed=cfg.seed,
            cb=cb,
        )
        cb.on_log(describe_search(search))
        seed_everything(cfg.seed)  # the run's own randomness does not depend on the search
    if plan.auto:
        cb.on_log(f"epochs auto: {plan.describe()}")
    return replace(cfg, epochs=plan.epochs, lr=search["chosen"] if search else cfg.lr), plan, search


def run_training(
    cfg: TrainConfig,
    out_dir: str | Path,
    callback: Callback | None = None,
    *,
    models_cache: Path | None = None,
    feature_cache_dir: Path | None = None,
    checkpoint_dir: Path | None = None,
    resume_from: Path | None = None,
) -> dict[str, Any]:
    """Train ``cfg``, write the artifact folder ``out_dir`` and return the summary dict."""
    cb = callback or Callback()
    validate(cfg)
    data = load_data(cfg)
    for warning in data.warnings:
        cb.on_log(f"warning: {warning}")
    info = model_info(cfg.model, models_cache)
    seed_everything(cfg.seed)
    tokenizer = load_tokenizer(info)
    started = time.perf_counter()
    if cfg.method == "probe":
        from backend.probing import run_probe

        return run_probe(cfg, data, info, tokenizer, Path(out_dir), cb, feature_cache_dir)
    model = build_model(cfg, info, data.label_names, tokenizer.pad_token_id)
    device = pick_device(cfg.device) if cfg.quant == "none" else next(model.parameters()).device
    train_enc = Encoded(tokenizer, data.train, cfg.max_length)
    eval_enc = Encoded(tokenizer, data.eval, cfg.max_length)
    requested = {"lr": cfg.lr, "epochs": cfg.epochs}
    search_started = time.perf_counter()
    cfg, plan, search = resolve_auto(cfg, model, train_enc, data.label_names, device, cb, resume_from)
    search_seconds = time.perf_counter() - search_started if search and not resume_from else 0.0
    fitter = Fitter(model, cfg, train_enc, eval_enc, data.label_names, device, cb)
    fitter.resolved = {"lr": cfg.lr, "epochs": cfg.epochs, "lr_search": search}
    counts = count_parameters(
        cfg.model,
        cfg.method,
        cfg.method_config,
        tuple(data.label_names),
        str(models_cache) if models_cache else None,
    )
    live = count(model)
    cb.on_start(
        {
            "trainable_params": live.trainable,
            "total_params": counts.total,
            "total_steps": fitter.total_steps,
            "total_epochs": plan.epochs,
            "device": str(device),
            "train_rows": len(train_enc),
            "eval_rows": len(eval_enc),
            "lr": cfg.effective_lr,
        }
    )
    start_epoch = checkpoint.load(resume_from, fitter) + 1 if resume_from else 1
    fitter.run(start_epoch, checkpoint_dir)
    if fitter.best_state is not None:
        model.load_state_dict(fitter.best_state, strict=False)
    train_seconds = time.perf_counter() - started
    summary = {
        "method": cfg.method,
        "quant": cfg.quant,
        "device": str(device),
        "accuracy": fitter.best["accuracy"],
        "macro_f1": fitter.best["macro_f1"],
        "eval_loss": fitter.best["eval_loss"],
        "best_epoch": fitter.best["epoch"],
        "trainable_params": live.trainable,
        "total_params": counts.total,
        "train_seconds": round(train_seconds, 3),
        "seconds_per_epoch": round(float(np.mean(fitter.epoch_seconds)), 3) if fitter.epoch_seconds else None,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.type == "cuda" else None,
        "train_rows": len(train_enc),
        "eval_rows": len(eval_enc),
        **autotune_summary(
            cfg,
            requested,
            plan,
            search,
            search_seconds,
            train_seconds,
            RunLength(len(fitter.history), fitter.stopped_early, fitter.step),
        ),
        **learning_check(fitter.best["accuracy"], data, cfg, plan, search is not None),
    }
    if summary["learning_flag"]:
        cb.on_log(f"warning: {summary['learning_flag']}")
    probs = predict_probs(model, eval_enc, device)
    art = export.save_run(
        Path(out_dir),
        model=model,
        cfg=cfg,
        info=info,
        tokenizer=tokenizer,
        data=data,
        summary=summary,
        history=fitter.history,
        best=fitter.best,
        eval_probs=probs,
    )
    summary.update(art)
    (Path(out_dir) / "metrics.json").write_text(
        json.dumps({**summary, "best": fitter.best, "history": fitter.history}, indent=2)
    )
    return summary
