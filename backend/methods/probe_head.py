"""The torch side of probing: the head, pooling, and the frozen-encoder + head model.

Kept apart from ``backend.methods.probe`` so that reading a probe's settings (the job
list, the CLI, the UI's forms) never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from backend.errors import ConfigError
from backend.methods.base import BuildContext, freeze
from backend.methods.probe import AUTO_LAYER

if TYPE_CHECKING:
    from backend.methods.probe import Config


def resolve_layer(layer: int, num_layers: int) -> int:
    """-1 means the last layer; 0 is the embeddings. "auto" (-2) is resolved by the probe
    runner on held-out training rows, before this."""
    if layer == -1:
        return num_layers
    if not 0 <= layer <= num_layers:
        raise ConfigError(
            f"Layer must be -2 (auto), -1 (the last) or between 0 and {num_layers} for this model, "
            f"got {layer}"
        )
    return layer


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
        # the rightmost unmasked position: right padding or left, unlike ``mask.sum(1) - 1``
        positions = torch.arange(mask.size(1), device=mask.device)
        idx = (positions * mask.to(positions.dtype)).argmax(1)
        return hidden[torch.arange(hidden.size(0), device=hidden.device), idx]
    return hidden[:, 0]


class ProbeModel(nn.Module):
    """Frozen encoder + head, for parameter counts and the naive (uncached) baseline."""

    def __init__(self, classifier: Any, cfg: Config, ctx: BuildContext) -> None:
        super().__init__()
        freeze(classifier)
        self.encoder = classifier.base_model
        # which layer does not change what is counted; "auto" counts as the last
        self.layer = resolve_layer(-1 if cfg.layer == AUTO_LAYER else cfg.layer, ctx.info.num_layers)
        self.pooling, self.last_token = cfg.pooling, ctx.info.is_decoder
        self.head = ProbeHead(ctx.info.hidden_size, len(ctx.label_names), cfg.head, cfg.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kw: Any) -> torch.Tensor:
        with torch.no_grad():
            out = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **kw
            )
            feats = pool(out.hidden_states[self.layer], attention_mask, self.pooling, self.last_token)
        return self.head(feats.float())
