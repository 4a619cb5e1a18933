"""LoRA (Hu et al.): a trainable low-rank update B·A beside frozen weight matrices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.methods.base import BuildContext, MethodConfig, MethodSpec, knob
from backend.methods.layers import find_layer_list, layer_cut, lower_layer_regex, top_layers_knob


@dataclass
class Config(MethodConfig):
    rank: int = knob(
        8,
        "LoRA rank",
        "Rank r of the update B·A; trainable params grow linearly with r.",
        min=1,
        max=256,
        step=1,
        short="r",
    )
    alpha: int = knob(
        16, "LoRA alpha", "Scaling: the update is multiplied by alpha / rank.", min=1, max=512, step=1
    )
    dropout: float = knob(0.1, "LoRA dropout", "Dropout on the LoRA input.", min=0.0, max=0.5, step=0.05)
    targets: str = knob(
        "attention q,v",
        "LoRA targets",
        "Which weight matrices get an update: the paper's query/value projections, or every linear layer.",
        choices=("attention q,v", "all linear"),
    )
    top_layers: int = top_layers_knob()


def layer_restriction(model: Any, cfg: Config, ctx: BuildContext) -> dict[str, Any]:
    """LoraConfig options that keep LoRA out of the layers below the ``top_layers`` cut.

    PEFT's own ``layers_to_transform`` says it plainly in adapter_config.json; PEFT refuses it
    beside the "all-linear" wildcard, so that choice names the lower layers in
    ``exclude_modules`` instead (a standard LoraConfig field too: PEFT reloads it as it is).
    """
    cut = layer_cut(ctx.info.num_layers, cfg.top_layers, ctx.info.name)
    if cut is None:
        return {}
    if cfg.targets == "all linear":
        return {"exclude_modules": lower_layer_regex(model, cut)}
    pattern = find_layer_list(model)[0].rsplit(".", 1)[-1]  # "layer" (BERT), "layers", "h" (GPT-2)
    return {"layers_to_transform": list(range(cut, ctx.info.num_layers)), "layers_pattern": pattern}


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    from peft import LoraConfig, TaskType, get_peft_model

    # None lets PEFT pick each architecture's query/value names (query/value, q_lin, c_attn...).
    targets = None if cfg.targets == "attention q,v" else "all-linear"
    peft_cfg = LoraConfig(
        task_type=TaskType[ctx.peft_task_type],
        r=cfg.rank,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=targets,
        **layer_restriction(model, cfg, ctx),
    )
    return get_peft_model(model, peft_cfg)


SPEC = MethodSpec(
    key="lora",
    label="LoRA",
    config_cls=Config,
    build=build,
    default_lr=2e-3,
    lr_candidates=(3e-4, 1e-3, 3e-3),
    description="Low-rank updates beside frozen weights; mergeable, so no extra inference latency.",
    library="peft",
    mergeable=True,
    name_knob="rank",
    cli_flags=("rank",),
)
