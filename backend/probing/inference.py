"""Probe inference with plain transformers + torch: base encoder, pool one layer, apply head."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import nn

from backend.catalogue import locate_base
from backend.methods.probe_head import ProbeHead, pool


class ProbeClassifier(nn.Module):
    """Frozen encoder + trained head; forward returns logits."""

    def __init__(
        self,
        encoder: Any,
        head: ProbeHead,
        layer: int,
        pooling: str,
        last_token: bool,
        per_token: bool = False,
    ) -> None:
        super().__init__()
        self.encoder, self.head = encoder, head
        self.layer, self.pooling, self.last_token, self.per_token = layer, pooling, last_token, per_token

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **kw: Any) -> torch.Tensor:
        out = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **kw
        )
        hidden = out.hidden_states[self.layer]
        if self.per_token:  # a tag per token: logits [batch, tokens, tags]
            return self.head(hidden.float())
        return self.head(pool(hidden, attention_mask, self.pooling, self.last_token).float())


def load_probe(artifact_dir: Path, manifest: dict[str, Any], quant_kwargs: dict[str, Any]) -> nn.Module:
    from transformers import AutoModel

    pcfg = json.loads((artifact_dir / "probe_config.json").read_text())
    encoder = AutoModel.from_pretrained(locate_base(manifest), **quant_kwargs)
    head = ProbeHead(pcfg["in_features"], pcfg["num_labels"], pcfg["head"], pcfg["hidden_size"])
    head.load_state_dict(load_file(str(artifact_dir / "probe_head.safetensors")))
    model = ProbeClassifier(
        encoder, head, pcfg["layer"], pcfg["pooling"], pcfg["last_token"], pcfg.get("per_token", False)
    )
    return model.to(next(encoder.parameters()).device)
