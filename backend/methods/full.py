"""Full fine-tuning: every weight trains (the accuracy reference, the largest artifact).

With ``top_layers`` N, only the top N layers, the pooler / final norm and the head train;
the embeddings and the layers below stay as loaded (the export is still a whole model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.methods.base import BuildContext, MethodConfig, MethodSpec
from backend.methods.layers import layer_cut, parameters_below_cut, top_layers_knob


@dataclass
class Config(MethodConfig):
    top_layers: int = top_layers_knob()


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    for p in model.parameters():
        p.requires_grad_(True)
    cut = layer_cut(ctx.info.num_layers, cfg.top_layers, ctx.info.name)
    if cut is not None:
        for _, p in parameters_below_cut(model, cut):
            p.requires_grad_(False)
    return model


SPEC = MethodSpec(
    key="full",
    label="Full fine-tuning",
    config_cls=Config,
    build=build,
    default_lr=5e-5,
    lr_candidates=(1e-5, 3e-5, 1e-4),
    description="Update every weight. Usually the most accurate; saves a full model copy.",
    library="transformers",
    freezes_base=False,
    quantizable=False,  # quantized weights cannot take the updates
)
