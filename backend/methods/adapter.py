"""Bottleneck adapters (AdapterHub ``adapters``): down-project, non-linearity, up-project, skip.

Placements: Houlsby (after attention and after the FFN), Pfeiffer (after the FFN only),
parallel (He et al.'s unified view: beside the FFN, scaled; beat sequential there).

``adapters`` (1.3.0) has bottleneck layers only for the architectures it was written for: among
decoders GPT-2, GPT-J, LLaMA, Mistral, Qwen2/3, Phi and Gemma 2 (checked by training a tiny
random model of each). OPT, BLOOM, Falcon, GPT-Neo(X), Gemma and Phi-3 are refused up front,
with a message naming the PEFT methods, which do work there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.catalogue import ModelInfo
from backend.errors import ConfigError
from backend.methods.base import BuildContext, MethodConfig, MethodSpec, knob
from backend.methods.layers import layer_cut, top_layers_knob

ADAPTER_NAME = "workbench"
# Decoder model types (config.model_type) adapters 1.3.0 supports: its own model folders
# (gpt2, gptj, llama, mistral) and its built-in plug-in interfaces (qwen2, qwen3, phi, gemma2).
DECODER_TYPES = ("gpt2", "gptj", "llama", "mistral", "qwen2", "qwen3", "phi", "gemma2")


def unsupported(model_type: str) -> str:
    return (
        f"Bottleneck adapters do not support {model_type} models: the adapters library has no "
        f"adapter layers for them (among decoders it supports {', '.join(DECODER_TYPES)}); "
        "choose LoRA, IA3, prompt tuning, prefix tuning or P-tuning instead"
    )


def refuses(info: ModelInfo) -> str | None:
    """Why bottleneck adapters cannot train ``info`` (None: they can)."""
    return unsupported(info.model_type) if info.is_decoder and info.model_type not in DECODER_TYPES else None


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


def reduction_factor(hidden: int, bottleneck: int) -> float:
    """AdapterHub sizes adapters by hidden // reduction_factor; hit ``bottleneck`` exactly.

    When hidden/bottleneck is not exact, float rounding could floor to bottleneck-1, so aim
    half a unit above.
    """
    return hidden / bottleneck if hidden % bottleneck == 0 else hidden / (bottleneck + 0.5)


def adapter_config(cfg: Config, hidden: int, leave_out: list[int] | None = None) -> Any:
    """The AdapterHub config; ``leave_out``: layers that get no adapter (below a top_layers cut)."""
    from adapters import DoubleSeqBnConfig, ParBnConfig, SeqBnConfig

    kwargs = {"reduction_factor": reduction_factor(hidden, cfg.bottleneck), "leave_out": leave_out or []}
    if cfg.placement == "houlsby":
        return DoubleSeqBnConfig(**kwargs)
    if cfg.placement == "pfeiffer":
        return SeqBnConfig(**kwargs)
    return ParBnConfig(**kwargs)  # scaling 4.0: the paper's setting


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    import adapters

    SPEC.check_model(ctx.info)
    cut = layer_cut(ctx.info.num_layers, cfg.top_layers, ctx.info.name)
    leave_out = list(range(cut)) if cut is not None else []
    try:
        adapters.init(model)
    except ValueError as exc:  # "Model X not pre-supported by adapters": an encoder not listed
        raise ConfigError(unsupported(ctx.info.model_type)) from exc
    model.add_adapter(ADAPTER_NAME, config=adapter_config(cfg, ctx.info.hidden_size, leave_out))
    model.train_adapter(ADAPTER_NAME)  # freezes the base, activates the adapter
    for name in ("classifier", "score", "pre_classifier"):  # the head always trains
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
    library="adapters",
    name_knob="bottleneck",
    cli_flags=("bottleneck",),
    refuses=refuses,
)
