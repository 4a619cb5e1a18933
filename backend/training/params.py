"""Exact trainable / total parameter counts, without loading any weights.

The model is instantiated on PyTorch's meta device (shapes only, no memory, no disk
reads beyond config.json), so the UI can call this as a slider moves.
"""

from __future__ import annotations

import functools
import logging
import warnings
from dataclasses import dataclass, replace
from typing import Any

import torch

from backend.catalogue import label_kwargs, load_config, model_info
from backend.methods import registry
from backend.methods.base import BuildContext


@dataclass(frozen=True)
class ParamCount:
    trainable: int
    total: int
    base: int = 0  # the model with its fresh head, before the method adds or freezes anything

    @property
    def percent(self) -> float:
        return 100.0 * self.trainable / self.total if self.total else 0.0

    def describe(self) -> str:
        return f"Trainable parameters: {self.trainable:,} ({self.percent:.2f}% of {self.total:,})"


def count(model: Any) -> ParamCount:
    """Count a live model's parameters (requires_grad = trainable)."""
    trainable = total = 0
    seen: set[int] = set()
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n = p.numel()
        total += n
        if p.requires_grad:
            trainable += n
    return ParamCount(trainable, total)


@functools.lru_cache(maxsize=16)
def _config(model: str, models_cache: str | None) -> Any:
    from pathlib import Path

    return load_config(model, Path(models_cache) if models_cache else None)[1]


def count_parameters(
    model: str,
    method: str,
    method_config: dict[str, Any] | None = None,
    label_names: list[str] | tuple[str, ...] = ("0", "1"),
    models_cache: str | None = None,
) -> ParamCount:
    """Trainable and total parameters of ``method`` on ``model``, built on the meta device."""
    from pathlib import Path

    from transformers import AutoModelForSequenceClassification

    spec = registry.get(method)
    cfg = spec.make_config(method_config)
    info = model_info(model, Path(models_cache) if models_cache else None)
    config = _config(model, models_cache).__class__.from_dict(_config(model, models_cache).to_dict())
    for k, v in label_kwargs(list(label_names)).items():
        setattr(config, k, v)
    ctx = BuildContext(info=info, label_names=list(label_names))
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            base = AutoModelForSequenceClassification.from_config(config)
            base_total = count(base).total  # before the method wraps it
            built = spec.build(base, cfg, ctx)
        finally:
            logging.disable(logging.NOTSET)
    return replace(count(built), base=base_total)
