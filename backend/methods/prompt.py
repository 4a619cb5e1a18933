"""Prompt tuning (Lester et al.): k trainable embeddings prepended to the input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.methods.base import BuildContext, MethodConfig, MethodSpec, knob, label_virtual_tokens


@dataclass
class Config(MethodConfig):
    prompt_length: int = knob(
        20, "Prompt length", "Number of trainable virtual tokens.", min=1, max=200, step=1, short="len"
    )
    init: str = knob(
        "label words",
        "Prompt initialization",
        "Random vectors, embeddings of random "
        "vocabulary tokens, or the embeddings of the label names (or your own text).",
        choices=("random", "vocab", "label words", "text"),
    )
    init_text: str = knob(
        "",
        "Initialization text",
        "Text whose token embeddings start the prompt (with initialization 'text').",
    )


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    from peft import PromptTuningConfig, PromptTuningInit, TaskType, get_peft_model

    kwargs: dict[str, Any] = {}
    if cfg.init in ("label words", "text"):
        text = cfg.init_text.strip() if cfg.init == "text" else ""
        kwargs = {
            "prompt_tuning_init": PromptTuningInit.TEXT,
            "prompt_tuning_init_text": text or " ".join(ctx.label_names),
            "tokenizer_name_or_path": ctx.info.path,
        }
    elif cfg.init == "vocab":
        kwargs = {"prompt_tuning_init": PromptTuningInit.SAMPLE_VOCAB}
    peft_cfg = PromptTuningConfig(
        task_type=TaskType[ctx.peft_task_type], num_virtual_tokens=cfg.prompt_length, **kwargs
    )
    return label_virtual_tokens(get_peft_model(model, peft_cfg), cfg.prompt_length, ctx)


SPEC = MethodSpec(
    key="prompt",
    label="Prompt tuning",
    config_cls=Config,
    build=build,
    default_lr=3e-2,
    # 0.1 is back in the grid (issue 51): without it prompt tuning at defaults moved from 0.868
    # to 0.842 on a held-out 6-class set. Lester et al. train at 0.3, but 0.3 never won a search
    # on the shared sets (bench/LR_SEARCH.md, "The shallow prompts' window"), so it stays out.
    lr_candidates=(3e-3, 1e-2, 3e-2, 1e-1),
    lr_window=4.0,  # 0.1 is 3.3 x the default; issue 36's half decade (3.16 x) cut it
    description="Trainable soft-prompt tokens at the input only. Tiny artifact; strong mainly on "
    "large models.",
    library="peft",
    name_knob="prompt_length",
    cli_flags=("prompt_length",),
    feeds_embeddings=True,  # decoders pad on the left for it
)
