"""Full fine-tuning: every weight trains (the accuracy reference, the largest artifact)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.methods.base import BuildContext, MethodConfig, MethodSpec


@dataclass
class Config(MethodConfig):
    """Full fine-tuning has no method-specific knobs."""


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    for p in model.parameters():
        p.requires_grad_(True)
    return model


SPEC = MethodSpec(
    key="full",
    label="Full fine-tuning",
    config_cls=Config,
    build=build,
    default_lr=5e-5,
    lr_candidates=(1e-5, 3e-5, 1e-4, 3e-4),
    description="Update every weight. Usually the most accurate; saves a full model copy.",
    library="transformers",
    freezes_base=False,
    quantizable=False,  # quantized weights cannot take the updates
)
