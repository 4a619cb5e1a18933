"""Cached features for probing.

The encoder is frozen, so one forward pass with ``output_hidden_states`` gives the pooled
representation of *every* layer. These are cached on disk (keyed by model, quantization,
the exact texts, max length and pooling) and heads train on them: a further epoch costs
milliseconds, and a layer sweep (one probe per layer) is nearly free.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from backend.catalogue import ModelInfo, quantization_config, quantized_load_kwargs
from backend.data.batching import IGNORE, Encoded
from backend.data.prepare import Split
from backend.methods.probe_head import pool
from backend.quant_workarounds import disable_cpu_bf16_4bit
from backend.training.callbacks import Callback, TrainingCancelled
from backend.training.runtime import autocast, pick_device


def cache_key(
    info: ModelInfo, quant: str, split: Split, max_length: int, pooling: str, precision: str = "fp32"
) -> str:
    h = hashlib.sha256()
    cfg_file = Path(info.path) / "config.json"
    stamp = cfg_file.stat().st_mtime_ns if cfg_file.is_file() else 0
    # fp32 keys stay what they were before precision existed, so older caches still hit.
    extra = [] if precision == "fp32" else [precision]
    h.update(json.dumps([info.path, stamp, quant, max_length, pooling, *extra]).encode())
    for i, text in enumerate(split.texts):
        h.update(text.encode())
        h.update(b"\x00" + (split.pairs[i].encode() if split.pairs is not None else b"") + b"\x01")
    return h.hexdigest()[:32]


def load_encoder(info: ModelInfo, quant: str, device: str = "auto") -> Any:
    from transformers import AutoModel  # deferred: transformers is slow to import

    kwargs: dict[str, Any] = {}
    qcfg = quantization_config(quant, info)
    if qcfg is not None:
        kwargs = quantized_load_kwargs(qcfg)
    encoder = AutoModel.from_pretrained(info.path, **kwargs)
    if quant == "4bit":
        disable_cpu_bf16_4bit(encoder)
    if qcfg is None:  # quantized models are placed by device_map already
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
    group_by_length: bool = True,
    precision: str = "fp32",
) -> torch.Tensor:
    """Pooled features of every layer: [layers + 1, rows, hidden] (index 0 = embeddings).

    ``precision`` "bf16" runs the encoder under autocast (the pooled features are kept fp32).
    For a per-token task (rows whose labels mark each word's first sub-word) the features are
    those sub-words' vectors, unpooled: [layers + 1, words, hidden], the words of row 0 first.
    """
    device = next(encoder.parameters()).device
    # Length-sorted batches pad far less (one pass, no gradients: order does not matter),
    # then the rows are put back in their original order.
    order = enc.by_length() if group_by_length else list(range(len(enc)))
    chunks, words = [], {}
    for start in range(0, len(order), batch_size):
        if cb is not None and cb.should_cancel():
            raise TrainingCancelled("cancelled while computing features")
        rows = order[start : start + batch_size]
        batch = enc.batch(rows)
        labels = batch.pop("labels")
        batch = {k: v.to(device) for k, v in batch.items()}
        with autocast(device, precision):
            out = encoder(**batch, output_hidden_states=True)
        if enc.task.per_word:  # each row's first sub-words, every layer (a label set is 2-D too)
            states = torch.stack([h.float().cpu() for h in out.hidden_states])
            for i, row in enumerate(rows):
                words[row] = states[:, i][:, labels[i] != IGNORE]
            continue
        layers = [
            pool(h, batch["attention_mask"], pooling, last_token).float().cpu() for h in out.hidden_states
        ]
        chunks.append(torch.stack(layers))
    if words:
        return torch.cat([words[row] for row in range(len(enc))], dim=1)
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
