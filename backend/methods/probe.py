"""Probing: a frozen encoder, a linear or small MLP head on one layer's pooled output.

Training runs on cached features (see ``backend.probing``): the encoder is frozen, so
every layer's pooled representation is computed once and heads train on those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from backend.errors import ConfigError
from backend.methods.base import BuildContext, MethodSpec, check_range, freeze, knob


@dataclass
class Config:
    head: str = knob(
        "linear",
        "Probe head",
        "A linear classifier, or an MLP with one hidden layer.",
        choices=("linear", "mlp"),
    )
    hidden_size: int = knob(
        256, "MLP hidden size", "Hidden units of the MLP head (ignored for linear).", min=8, max=4096, step=8
    )
    pooling: str = knob(
        "mean",
        "Pooling",
        "Mean of the token vectors, or the first ([CLS]) token (the last token for decoder models).",
        choices=("mean", "cls"),
    )
    layer: int = knob(
        -1,
        "Layer",
        "Which layer to probe: 0 = embeddings, 1..L = transformer layers, -1 = the last.",
        min=-1,
        max=96,
        step=1,
    )
    sweep_layers: bool = knob(
        False,
        "Probe every layer",
        "Train one probe per layer (nearly free with cached features) and report accuracy by layer.",
    )

    def __post_init__(self) -> None:
        check_range(self)


class ProbeHead(nn.Module):
    """The trained part of a probe: features [N, H] -> logits [N, C]."""

    def __init__(self, in_features: int, num_labels: int, head: str, hidden_size: int) -> None:
        super().__init__()
        if head == "linear":
            self.net: nn.Module = nn.Linear(in_features, num_labels)
        else:
            self.net = nn.Sequential(
                nn.Linear(in_features, hidden_size),
                nn.GELU(),
                nn.Dropout(0.1),
                nn.Linear(hidden_size, num_labels),
            )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str, last_token: bool) -> torch.Tensor:
    """Pool token vectors [B, T, H] to [B, H] (mask-aware mean, first, or last real token)."""
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
    if last_token:  # decoders have no [CLS]; their summary token is the last real one
        idx = mask.sum(1).long() - 1
        return hidden[torch.arange(hidden.size(0), device=hidden.device), idx]
    return hidden[:, 0]


def resolve_layer(layer: int, num_layers: int) -> int:
    """-1 means the last layer; 0 is the embeddings."""
    if layer == -1:
        return num_layers
    if not 0 <= layer <= num_layers:
        raise ConfigError(f"Layer must be -1 or between 0 and {num_layers} for this model, got {layer}")
    return layer


class ProbeModel(nn.Module):
    """Frozen encoder + head, for parameter counts and the naive (uncached) baseline."""

    def __init__(self, classifier: Any, cfg: Config, ctx: BuildContext) -> None:
        super().__init__()
        freeze(classifier)
        self.encoder = classifier.base_model
        self.layer = resolve_layer(cfg.layer, ctx.info.num_layers)
        self.pooling, self.last_token = cfg.pooling, ctx.info.is_decoder
        self.head = ProbeHead(ctx.info.hidden_size, len(ctx.label_names), cfg.head, cfg.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kw: Any) -> torch.Tensor:
        with torch.no_grad():
            out = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **kw
            )
            feats = pool(out.hidden_states[self.layer], attention_mask, self.pooling, self.last_token)
        return self.head(feats.float())


def build(model: Any, cfg: Config, ctx: BuildContext) -> ProbeModel:
    return ProbeModel(model, cfg, ctx)


SPEC = MethodSpec(
    key="probe",
    label="Probing",
    config_cls=Config,
    build=build,
    default_lr=1e-2,
    description="Frozen model, train only a small head on one layer's pooled output. Shows what "
    "each layer already encodes (BERTology); the cheapest method by far.",
    library="own",
    default_epochs=10,
)
