"""Bottleneck adapters: down-project, non-linearity, up-project, added to a sublayer's output.

Placements: Houlsby (after attention and after the FFN), Pfeiffer (after the FFN only),
parallel (He et al.'s unified view: beside the FFN, scaled; beat sequential there). The module
is the project's own (``backend.methods.bottleneck``, torch only): it computes what AdapterHub's
did from the same weights (``tests/fixtures/adapterhub``), and runs saved with AdapterHub still
load (``backend.methods.adapterhub_layout``).

It reaches BERT-family encoders, Llama-family decoders (Llama, Mistral, Qwen2/3) and GPT-2 through
modules they all name alike; other architectures are refused up front, with a message naming the
PEFT methods, which work there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.catalogue import ModelInfo
from backend.methods.base import BuildContext, MethodConfig, MethodSpec, knob
from backend.methods.layers import layer_cut, top_layers_knob


def unsupported(model_type: str) -> str:
    from backend.methods import bottleneck  # torch: not at the web app's start

    return (
        f"Bottleneck adapters do not support {model_type} models: the adapter module knows where to sit in "
        f"{', '.join(sorted(set(bottleneck.MODEL_TYPES)))} models; choose LoRA, IA3, prompt tuning, "
        "prefix tuning or P-tuning instead"
    )


def refuses(info: ModelInfo) -> str | None:
    """Why bottleneck adapters cannot train ``info`` (None: they can)."""
    from backend.methods import bottleneck

    return unsupported(info.model_type) if bottleneck.family_of(info.model_type) is None else None


@dataclass
class Config(MethodConfig):
    bottleneck: int = knob(
        64,
        "Bottleneck size",
        "Width of the adapter's down-projection.",
        min=2,
        max=1024,
        step=2,
        short="size",
    )
    placement: str = knob(
        "houlsby",
        "Adapter placement",
        "houlsby: after attention and FFN; "
        "pfeiffer: after the FFN only; parallel: beside the FFN, scaled (He et al.).",
        choices=("houlsby", "pfeiffer", "parallel"),
    )
    top_layers: int = top_layers_knob()


HEADS = ("classifier", "score", "pre_classifier")  # the task's head: it always trains


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    from backend.methods import bottleneck

    SPEC.check_model(ctx.info)
    cut = layer_cut(ctx.info.num_layers, cfg.top_layers, ctx.info.name)
    layers = list(range(cut, ctx.info.num_layers)) if cut is not None else None
    for p in model.parameters():  # the base stays frozen
        p.requires_grad_(False)
    bottleneck.attach(model, bottleneck.preset(cfg.placement, cfg.bottleneck, layers))
    for name in HEADS:
        head = getattr(model, name, None)
        if head is not None:
            for p in head.parameters():
                p.requires_grad_(True)
    return model


SPEC = MethodSpec(
    key="adapter",
    label="Bottleneck adapter",
    config_cls=Config,
    build=build,
    default_lr=1e-3,
    lr_candidates=(1e-4, 3e-4, 1e-3, 3e-3),
    description="Small bottleneck layers inserted in every block (Houlsby/Pfeiffer/parallel); "
    "near full fine-tuning accuracy with a few % of the parameters.",
    library="bottleneck",
    name_knob="bottleneck",
    cli_flags=("bottleneck",),
    refuses=refuses,
)
