"""The probe runner: features once (cached), then one head per probed layer; keep the best.

Named steps: :func:`layer_features` (encoder pass or cache), :func:`train_layers` (the
learning-rate search and head training per layer), :func:`run_probe` (the summary).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from backend.data.batching import IGNORE, Encoded
from backend.data.prepare import Split
from backend.methods.probe import AUTO_LAYER, Config
from backend.methods.probe_head import ProbeHead, resolve_layer
from backend.probing.features import cache_key, cached_features, compute_features, load_encoder
from backend.probing.heads import outputs_of, search_head_lr, train_head
from backend.probing.layer_choice import choose_layer, describe_layer_choice
from backend.tasks.base import Task
from backend.tasks.word_rows import WordRows
from backend.training.autotune import (
    EpochPlan,
    RunLength,
    autotune_summary,
    describe_search,
    learning_check,
    plan_epochs,
)
from backend.training.callbacks import LayerInfo, TrainingCancelled
from backend.training.config import AUTO
from backend.training.outcome import RunContext, RunOutcome, run_summary
from backend.training.params import count_parameters
from backend.training.runtime import pick_device, resolve_precision


@dataclass
class Features:
    """Every layer's pooled features of both splits, and where they came from."""

    train: torch.Tensor  # [layers + 1, rows, hidden]
    eval: torch.Tensor
    cached: bool
    keys: list[str]  # the cache files used (deleting the job removes those no other job names)
    device: str
    seconds: float
    # the training rows held out to choose the task's "auto" settings on (``Task.holdout_rows``)
    holdout: torch.Tensor | None = None


@dataclass
class LayerResult:
    layer: int
    head: ProbeHead
    best: dict[str, Any]
    history: list[dict[str, Any]]
    cfg: Any  # the TrainConfig with this layer's resolved numbers
    search: dict[str, Any] | None


def layer_features(ctx: RunContext, pcfg: Config) -> Features:
    """Pooled features of every layer for the train and eval rows, from the cache if there."""
    cfg, started, encoder, keys = ctx.cfg, time.perf_counter(), None, []

    # Training rows in the run's precision (bf16 autocast where native: about twice as fast);
    # evaluation rows in fp32, as the exported probe computes them, so the reported figures and
    # the reload check's rows are what a reload reproduces.
    train_precision = resolve_precision(cfg.precision, pick_device(cfg.device), cfg.quant)

    def features(split: Split, precision: str) -> tuple[torch.Tensor, bool]:
        key = cache_key(ctx.info, cfg.quant, split, cfg.max_length, _pooling(ctx, pcfg), precision)
        keys.append(key)

        def compute() -> torch.Tensor:
            nonlocal encoder
            encoder = encoder or load_encoder(ctx.info, cfg.quant, cfg.device)
            ctx.cb.on_log(f"computing features of every layer for {len(split)} rows ({precision})")
            enc = Encoded(ctx.tokenizer, split, cfg.max_length, ctx.data.task)
            return compute_features(
                encoder, enc, pcfg.pooling, ctx.info.is_decoder, cb=ctx.cb,
                group_by_length=cfg.group_by_length, precision=precision,
            )  # fmt: skip

        return cached_features(ctx.feature_cache_dir, key, compute)

    ftrain, hit_t = features(ctx.data.train, train_precision)
    feval, hit_e = features(ctx.data.eval, "fp32")
    fheld = features(ctx.data.holdout, "fp32")[0] if ctx.data.holdout is not None else None
    seconds = time.perf_counter() - started
    ctx.cb.on_log(f"features {'from cache' if hit_t and hit_e else 'computed'} in {seconds:.1f}s")
    # The encoder ran on the GPU when there is one; heads are tiny and train on the CPU.
    device = str(next(encoder.parameters()).device) if encoder is not None else "cpu (cached features)"
    used = keys if ctx.feature_cache_dir is not None else []
    return Features(ftrain, feval, hit_t and hit_e, used, device, seconds, fheld)


def _pooling(ctx: RunContext, pcfg: Config) -> str:
    """A per-token task's features are each word's first sub-word (no pooling)."""
    return "words" if ctx.data.task.per_word else pcfg.pooling


@dataclass
class Targets:
    """What the heads train on: a target per feature row (a text's, or a word's), the
    evaluation rows' targets, and the task that scores them (per word: ``WordRows``)."""

    train: torch.Tensor
    eval: np.ndarray
    task: Task
    kept: list[int] | None = None  # words with a feature per evaluation sentence (per-token tasks)


def head_targets(ctx: RunContext) -> Targets:
    data = ctx.data
    if not data.task.per_word:
        return Targets(torch.tensor(data.train.labels), np.asarray(data.eval.labels), data.task)

    def words(split: Split) -> tuple[list[int], list[int]]:
        enc = Encoded(ctx.tokenizer, split, ctx.cfg.max_length, data.task)
        kept = [sum(t != IGNORE for t in f["labels"]) for f in enc.features]
        return [t for tags, k in zip(split.labels, kept, strict=True) for t in tags[:k]], kept

    (y, _), (ye, kept) = words(data.train), words(data.eval)
    task = WordRows(data.task, data.train.labels, data.eval.labels, kept)
    return Targets(torch.tensor(y), np.asarray(ye), task, kept)


def train_layers(
    ctx: RunContext, pcfg: Config, feats: Features, layers: list[int], plan: EpochPlan, targets: Targets
) -> tuple[list[LayerResult], float]:
    """One head per layer (the learning rate searched per layer when "auto")."""
    cfg, cb, data = ctx.cfg, ctx.cb, ctx.data
    y, ye, task = targets.train, targets.eval, targets.task
    results: list[LayerResult] = []
    search_seconds = 0.0
    for layer in layers:
        if cb.should_cancel():
            raise TrainingCancelled(f"cancelled after {len(results)} of {len(layers)} layers")
        search = None
        if cfg.lr == AUTO:
            search = search_head_lr(feats.train[layer], y, pcfg, cfg, data.label_names, plan.epochs, cb, task)
            search_seconds += search["seconds"]
            cb.on_log((f"layer {layer}: " if pcfg.sweep_layers else "") + describe_search(search))
        layer_cfg = replace(cfg, epochs=plan.epochs, lr=search["chosen"] if search else cfg.lr)
        head, best, history = train_head(
            feats.train[layer], y, feats.eval[layer], ye, pcfg, layer_cfg, data.label_names,
            None if pcfg.sweep_layers else cb, task,
        )  # fmt: skip
        results.append(LayerResult(layer, head, best, history, layer_cfg, search))
        if pcfg.sweep_layers:
            cb.on_log(f"layer {layer}: {data.task.epoch_text(best)}")
            cb.on_layer(LayerInfo(layer, len(results), len(layers), best, history[-1]["train_loss"]))
    return results, search_seconds


def _layer_table(results: list[LayerResult], task: Task) -> list[dict[str, Any]]:
    """Each layer's headline metrics, its score (the task's primary metric) and its loss."""
    keys = (*task.headline, "score", "eval_loss")
    return [{"layer": r.layer, **{k: r.best[k] for k in keys}} for r in results]


def _chosen_task(ctx: RunContext, top: LayerResult, feats: Features, targets: Targets) -> Task:
    """The run's task with its "auto" settings chosen on the held-out training rows' outputs at
    the best layer (``Task.choose_settings``), logged; as it is when no row was held out."""
    data = ctx.data
    if feats.holdout is None or data.holdout is None:
        return data.task
    outputs = targets.task.outputs(top.head.eval()(feats.holdout[top.layer])).detach().numpy()
    task = data.task.choose_settings(data.task.truth(data.holdout.labels), outputs, data.label_names)
    ctx.cb.on_log(f"chose {task.settings_dict()} on {len(data.holdout)} held-out training rows")
    return task


def run_probe(ctx: RunContext) -> RunOutcome:
    """Train a probe (or one per layer) on cached features; the best layer's head is kept."""
    cfg, data = ctx.cfg, ctx.data
    pcfg: Config = cfg.method_settings()
    feats = layer_features(ctx, pcfg)
    targets = head_targets(ctx)
    n_train, n_eval = len(data.train), len(data.eval)
    plan, requested = plan_epochs(cfg, n_train), {"lr": cfg.lr, "epochs": cfg.epochs}
    choice = None
    if pcfg.sweep_layers:
        layers = list(range(feats.train.shape[0]))
    elif pcfg.layer == AUTO_LAYER:
        choice = choose_layer(
            feats.train, targets.train, pcfg, cfg, data.label_names, plan.epochs, ctx.cb, targets.task
        )
        ctx.cb.on_log(describe_layer_choice(choice))
        layers = [choice["chosen"]]
    else:
        layers = [resolve_layer(pcfg.layer, ctx.info.num_layers)]
    ctx.cb.on_start(
        {"trainable_params": None, "total_steps": None, "device": feats.device,
         "train_rows": n_train, "eval_rows": n_eval, "layers": layers}
    )  # fmt: skip
    t0 = time.perf_counter()
    results, search_seconds = train_layers(ctx, pcfg, feats, layers, plan, targets)
    search_seconds += choice["seconds"] if choice else 0.0  # the choice is part of what "auto" costs
    head_seconds = time.perf_counter() - t0
    top = max(results, key=lambda r: (r.best["score"], -r.best["eval_loss"]))
    task = _chosen_task(ctx, top, feats, targets)
    if task is not data.task:  # the best layer scored again by the settings chosen
        eval_outputs = task.outputs(top.head.eval()(feats.eval[top.layer])).detach().numpy()
        top.best = {**top.best, **task.metrics(task.truth(data.eval.labels), eval_outputs, data.label_names)}
    if choice:  # the run's settings name the layer it trained; the choice is recorded beside them
        top.cfg = replace(top.cfg, method_config={**top.cfg.method_config, "layer": top.layer})
    train_seconds = time.perf_counter() - ctx.started
    total = count_parameters(ctx.info.path, cfg.method, cfg.method_config, tuple(data.label_names)).total
    history = top.history
    length = RunLength(len(history), len(history) if len(history) < plan.epochs else None, 0)
    summary = {
        **run_summary(
            replace(ctx, cfg=top.cfg),
            top.best,
            device=feats.device,
            trainable=sum(p.numel() for p in top.head.parameters()),
            total=total,
            train_seconds=train_seconds,
            seconds_per_epoch=round(head_seconds / (len(results) * top.cfg.effective_epochs), 4),
            train_rows=n_train,
            eval_rows=n_eval,
        ),
        "layer": top.layer,
        "feature_seconds": round(feats.seconds, 3),
        "features_cached": feats.cached,
        "feature_cache_keys": feats.keys,
        "layer_accuracy": _layer_table(results, data.task) if pcfg.sweep_layers else None,
        "layer_choice": choice,
        **autotune_summary(top.cfg, requested, plan, top.search, search_seconds, train_seconds, length),
        **learning_check(top.best["score"], data, top.cfg, plan, top.search is not None),
    }
    eval_probs = targets.task.outputs(top.head.eval()(feats.eval[top.layer])).detach().numpy()
    if isinstance(targets.task, WordRows):  # words back into their sentences
        eval_probs = targets.task.pack(eval_probs)
    probe = {
        "layer": top.layer,
        "pooling": pcfg.pooling,
        "head": pcfg.head,
        "hidden_size": pcfg.hidden_size,
        "in_features": ctx.info.hidden_size,
        "num_labels": outputs_of(data.task, data.label_names),
        "last_token": ctx.info.is_decoder,
        "per_token": data.task.per_word,  # a tag per token: the head reads every position
    }
    state = {k: v.contiguous() for k, v in top.head.state_dict().items()}
    return RunOutcome(
        top.cfg, summary, top.best, history, eval_probs, probe=probe, head_state=state, task=task
    )
