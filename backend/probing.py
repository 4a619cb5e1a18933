"""Probing on cached features.

The encoder is frozen, so one forward pass with ``output_hidden_states`` gives the pooled
representation of *every* layer. These are cached on disk (keyed by model, quantization,
the exact texts, max length and pooling) and heads train on them: a further epoch costs
milliseconds, and a layer sweep (one probe per layer) is nearly free.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from backend import export
from backend.autotune import (
    RunLength,
    autotune_summary,
    better,
    epochs_without_improvement,
    learning_check,
    plan_epochs,
)
from backend.batching import Encoded
from backend.callbacks import Callback, EpochInfo, StepInfo, TrainingCancelled
from backend.data import PreparedData, Split
from backend.evaluation import metrics_from_probs
from backend.lr_search import (
    WARMUP_SHARE,
    batches_forever,
    holdout_split,
    plan_schedule,
    result_dict,
    sample_costs,
    search_batch_size,
    successive_halving,
)
from backend.methods import registry
from backend.methods.probe import Config, resolve_layer
from backend.models import ModelInfo
from backend.probe_head import ProbeHead, pool
from backend.train_config import AUTO, TrainConfig


def cache_key(info: ModelInfo, quant: str, split: Split, max_length: int, pooling: str) -> str:
    h = hashlib.sha256()
    cfg_file = Path(info.path) / "config.json"
    stamp = cfg_file.stat().st_mtime_ns if cfg_file.is_file() else 0
    h.update(json.dumps([info.path, stamp, quant, max_length, pooling]).encode())
    for i, text in enumerate(split.texts):
        h.update(text.encode())
        h.update(b"\x00" + (split.pairs[i].encode() if split.pairs is not None else b"") + b"\x01")
    return h.hexdigest()[:32]


def load_encoder(info: ModelInfo, quant: str, device: str = "auto") -> Any:
    from transformers import AutoModel

    from backend.models import disable_cpu_bf16_4bit, quantization_config, quantized_load_kwargs

    kwargs: dict[str, Any] = {}
    qcfg = quantization_config(quant, info)
    if qcfg is not None:
        kwargs = quantized_load_kwargs(qcfg)
    encoder = AutoModel.from_pretrained(info.path, **kwargs)
    if quant == "4bit":
        disable_cpu_bf16_4bit(encoder)
    if qcfg is None:  # quantized models are placed by device_map already
        from backend.train import pick_device

        encoder.to(pick_device(device))
    return encoder.eval()


@torch.no_grad()
def compute_features(
    encoder: Any,
    enc: Encoded,
    pooling: str,
    last_token: bool,
    batch_size: int = 64,
    cb: Callback | None = None,
) -> torch.Tensor:
    """Pooled features of every layer: [layers + 1, rows, hidden] (index 0 = embeddings)."""
    device = next(encoder.parameters()).device
    # Length-sorted batches pad far less (one pass, no gradients: order does not matter),
    # then the rows are put back in their original order.
    order = sorted(range(len(enc)), key=lambda i: len(enc.features[i]["input_ids"]))
    chunks = []
    for start in range(0, len(order), batch_size):
        if cb is not None and cb.should_cancel():
            raise TrainingCancelled("cancelled while computing features")
        batch = enc.batch(order[start : start + batch_size])
        batch.pop("labels")
        batch = {k: v.to(device) for k, v in batch.items()}
        out = encoder(**batch, output_hidden_states=True)
        layers = [
            pool(h, batch["attention_mask"], pooling, last_token).float().cpu() for h in out.hidden_states
        ]
        chunks.append(torch.stack(layers))
    sorted_feats = torch.cat(chunks, dim=1)
    feats = torch.empty_like(sorted_feats)
    feats[:, order] = sorted_feats
    return feats


def cached_features(cache_dir: Path | None, key: str, compute: Any) -> tuple[torch.Tensor, bool]:
    """Load features for ``key`` or compute and store them; returns (features, was_cached)."""
    path = cache_dir / f"{key}.safetensors" if cache_dir is not None else None
    if path is not None and path.is_file():
        return load_file(str(path))["features"], True
    feats = compute()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        save_file({"features": feats.contiguous()}, str(tmp))
        tmp.replace(path)
    return feats, False


class HeadTrial:
    """One learning-rate candidate for a probe head (see backend.lr_search)."""

    def __init__(self, lr: float, x: torch.Tensor, y: torch.Tensor, held: tuple[torch.Tensor, np.ndarray],
                 pcfg: Config, cfg: TrainConfig, label_names: list[str], warmup: int,
                 batch_size: int) -> None:  # fmt: skip
        torch.manual_seed(cfg.seed)  # every candidate starts from the same head
        self.head = ProbeHead(x.shape[1], len(label_names), pcfg.head, pcfg.hidden_size)
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
            loss = torch.nn.functional.cross_entropy(self.head(self.x[idx]), self.y[idx])
            self.done += 1
            if not torch.isfinite(loss):
                return False
            self.opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.head.parameters(), self.cfg.max_grad_norm)
            self.opt.step()
        return True

    def score(self) -> tuple[float, float]:
        metrics = evaluate_head(self.head, *self.held, self.label_names)
        return metrics["eval_loss"], metrics["accuracy"]


def search_head_lr(
    x: torch.Tensor, y: torch.Tensor, pcfg: Config, cfg: TrainConfig, label_names: list[str], epochs: int,
    cb: Callback,
) -> dict[str, Any]:  # fmt: skip
    """The learning-rate search on cached features: training rows only, as for models."""
    started = time.perf_counter()
    lrs = registry.get("probe").learning_rates(pcfg)
    batch_size = search_batch_size(cfg.batch_size)
    schedule = plan_schedule(len(lrs), len(y), sample_costs(batch_size, epochs * len(y)))
    fit, held = holdout_split(y.tolist(), schedule.holdout_rows, cfg.seed)
    warmup = max(1, round(WARMUP_SHARE * schedule.total_steps))

    def trial(lr: float) -> HeadTrial:
        held_out = (x[held], y[held].numpy())
        return HeadTrial(lr, x[fit], y[fit], held_out, pcfg, cfg, label_names, warmup, batch_size)

    candidates = successive_halving(lrs, trial, schedule, cb)
    return result_dict(candidates, schedule, time.perf_counter() - started, len(fit))


def train_head(
    x: torch.Tensor,
    y: torch.Tensor,
    xe: torch.Tensor,
    ye: np.ndarray,
    pcfg: Config,
    cfg: TrainConfig,
    label_names: list[str],
    cb: Callback | None,
) -> tuple[ProbeHead, dict[str, Any], list[dict[str, Any]]]:
    """Train one probe head on features; returns the best-epoch head, its metrics, history.

    ``cfg`` holds numbers here ("auto" was resolved by the caller); early stopping as in
    the model loop.
    """
    torch.manual_seed(cfg.seed)
    head = ProbeHead(x.shape[1], len(label_names), pcfg.head, pcfg.hidden_size)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.effective_lr, weight_decay=cfg.weight_decay)
    epochs, n = cfg.effective_epochs, len(y)
    steps_per_epoch = math.ceil(n / cfg.batch_size)
    from transformers import get_linear_schedule_with_warmup

    sched = get_linear_schedule_with_warmup(
        opt, int(cfg.warmup_ratio * epochs * steps_per_epoch), epochs * steps_per_epoch
    )
    best, best_state, history, step, start = None, None, [], 0, time.perf_counter()
    for epoch in range(1, epochs + 1):
        head.train()
        order = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed + epoch))
        losses, t_last = [], time.perf_counter()
        for i in range(0, n, cfg.batch_size):
            if cb is not None and cb.should_cancel():
                raise TrainingCancelled(f"cancelled at step {step}")
            idx = order[i : i + cfg.batch_size]
            loss = torch.nn.functional.cross_entropy(head(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(head.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            step += 1
            losses.append(loss.item())
            if cb is not None:
                now = time.perf_counter()
                cb.on_step(
                    StepInfo(
                        step,
                        epochs * steps_per_epoch,
                        epoch,
                        loss.item(),
                        sched.get_last_lr()[0],
                        len(idx) / max(now - t_last, 1e-9),
                        now - start,
                    )
                )
                t_last = now
        metrics = evaluate_head(head, xe, ye, label_names)
        is_best = better(metrics, best)
        if is_best:
            best = {**metrics, "epoch": epoch}
            best_state = {k: v.clone() for k, v in head.state_dict().items()}
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), **metrics})
        if cb is not None:
            cb.on_epoch(EpochInfo(epoch, epochs, step, metrics, float(np.mean(losses)), is_best))
        patience = cfg.early_stopping_patience
        if patience and epochs_without_improvement(history) >= patience:
            break
    head.load_state_dict(best_state)
    return head, best, history


@torch.no_grad()
def evaluate_head(
    head: ProbeHead, xe: torch.Tensor, ye: np.ndarray, label_names: list[str]
) -> dict[str, Any]:
    head.eval()
    return metrics_from_probs(ye, torch.softmax(head(xe), -1).numpy(), label_names)


def run_probe(
    cfg: TrainConfig,
    data: PreparedData,
    info: ModelInfo,
    tokenizer: Any,
    out_dir: Path,
    cb: Callback,
    cache_dir: Path | None,
) -> dict[str, Any]:
    """Train a probe (or one per layer), save the best head, return the run summary."""
    from backend.params import count_parameters
    from backend.train import peak_rss_mb

    pcfg: Config = cfg.method_settings()
    started = time.perf_counter()
    encoder = None
    keys: list[str] = []

    def features(split: Split) -> tuple[torch.Tensor, bool]:
        nonlocal encoder
        key = cache_key(info, cfg.quant, split, cfg.max_length, pcfg.pooling)
        keys.append(key)

        def compute() -> torch.Tensor:
            nonlocal encoder
            encoder = encoder or load_encoder(info, cfg.quant, cfg.device)
            cb.on_log(f"computing features of every layer for {len(split)} rows")
            return compute_features(
                encoder, Encoded(tokenizer, split, cfg.max_length), pcfg.pooling, info.is_decoder, cb=cb
            )

        return cached_features(cache_dir, key, compute)

    (ftrain, hit_t), (feval, hit_e) = features(data.train), features(data.eval)
    feature_seconds = time.perf_counter() - started
    cb.on_log(f"features {'from cache' if hit_t and hit_e else 'computed'} in {feature_seconds:.1f}s")
    y, ye = torch.tensor(data.train.labels), np.asarray(data.eval.labels)
    # The encoder ran on the GPU when there is one; heads are tiny and train on the CPU.
    device = str(next(encoder.parameters()).device) if encoder is not None else "cpu (cached features)"
    layers = range(ftrain.shape[0]) if pcfg.sweep_layers else [resolve_layer(pcfg.layer, info.num_layers)]
    cb.on_start(
        {
            "trainable_params": None,
            "total_steps": None,
            "device": device,
            "train_rows": len(y),
            "eval_rows": len(ye),
            "layers": list(layers),
        }
    )
    results = []
    t0 = time.perf_counter()
    plan, requested, search_seconds = plan_epochs(cfg, len(y)), {"lr": cfg.lr, "epochs": cfg.epochs}, 0.0
    for layer in layers:
        if cb.should_cancel():
            raise TrainingCancelled(f"cancelled after {len(results)} of {len(layers)} layers")
        search = None
        if cfg.lr == AUTO:
            search = search_head_lr(ftrain[layer], y, pcfg, cfg, data.label_names, plan.epochs, cb)
            search_seconds += search["seconds"]
        layer_cfg = replace(cfg, epochs=plan.epochs, lr=search["chosen"] if search else cfg.lr)
        head, best, history = train_head(
            ftrain[layer], y, feval[layer], ye, pcfg, layer_cfg, data.label_names,
            None if pcfg.sweep_layers else cb,
        )  # fmt: skip
        results.append((layer, head, best, history, layer_cfg, search))
        if pcfg.sweep_layers:
            cb.on_log(f"layer {layer}: accuracy {best['accuracy']:.4f}")
            cb.on_epoch(
                EpochInfo(
                    len(results),
                    len(layers),
                    len(results),
                    best,
                    history[-1]["train_loss"],
                    False,
                    extra={"layer": layer},
                )
            )
    head_seconds = time.perf_counter() - t0
    layer, head, best, history, cfg, search = max(
        results, key=lambda r: (r[2]["accuracy"], -r[2]["eval_loss"])
    )
    train_seconds = time.perf_counter() - started
    length = RunLength(len(history), len(history) if len(history) < plan.epochs else None, 0)
    summary = {
        "method": "probe",
        "quant": cfg.quant,
        "device": device,
        "accuracy": best["accuracy"],
        "macro_f1": best["macro_f1"],
        "eval_loss": best["eval_loss"],
        "best_epoch": best["epoch"],
        "layer": layer,
        "trainable_params": sum(p.numel() for p in head.parameters()),
        "total_params": count_parameters(
            info.path, "probe", cfg.method_config, tuple(data.label_names)
        ).total,
        "train_seconds": round(train_seconds, 3),
        "feature_seconds": round(feature_seconds, 3),
        "features_cached": hit_t and hit_e,
        # Which cache files this run used: deleting the job removes those no other job names.
        "feature_cache_keys": keys if cache_dir is not None else [],
        "seconds_per_epoch": round(head_seconds / (len(results) * cfg.effective_epochs), 4),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "peak_gpu_mb": None,
        "train_rows": len(y),
        "eval_rows": len(ye),
        "layer_accuracy": [
            {
                "layer": r[0],
                "accuracy": r[2]["accuracy"],
                "macro_f1": r[2]["macro_f1"],
                "eval_loss": r[2]["eval_loss"],
            }
            for r in results
        ]
        if pcfg.sweep_layers
        else None,
        **autotune_summary(cfg, requested, plan, search, search_seconds, train_seconds, length),
        **learning_check(best["accuracy"], data, cfg, plan, search is not None),
    }
    eval_probs = torch.softmax(head.eval()(feval[layer]), -1).detach().numpy()
    summary.update(save_probe(out_dir, head, layer, pcfg, cfg, info, tokenizer, data, summary, eval_probs))
    (out_dir / "metrics.json").write_text(json.dumps({**summary, "best": best, "history": history}, indent=2))
    return summary


def save_probe(
    out_dir: Path,
    head: ProbeHead,
    layer: int,
    pcfg: Config,
    cfg: TrainConfig,
    info: ModelInfo,
    tokenizer: Any,
    data: PreparedData,
    summary: dict[str, Any],
    eval_probs: np.ndarray,
) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.contiguous() for k, v in head.state_dict().items()}, str(out_dir / "probe_head.safetensors")
    )
    probe_cfg = {
        "layer": layer,
        "pooling": pcfg.pooling,
        "head": pcfg.head,
        "hidden_size": pcfg.hidden_size,
        "in_features": info.hidden_size,
        "num_labels": len(data.label_names),
        "last_token": info.is_decoder,
    }
    (out_dir / "probe_config.json").write_text(json.dumps(probe_cfg, indent=2))
    return export.write_common(
        out_dir,
        cfg=cfg,
        info=info,
        tokenizer=tokenizer,
        data=data,
        summary=summary,
        eval_probs=eval_probs,
        extra_manifest={"probe": probe_cfg},
    )
