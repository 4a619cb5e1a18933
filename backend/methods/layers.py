"""The "Train top layers" setting that LoRA, IA3, adapters and full fine-tuning share: the
knob, the cut, and how to find a model's transformer blocks through any wrapper."""

from __future__ import annotations

import re
from typing import Any

from backend.errors import ConfigError
from backend.methods.base import knob

# Attribute names HF models give their list of transformer blocks (BERT: encoder.layer,
# LLaMA/Mistral/Qwen: model.layers, GPT-2/Falcon/Bloom: transformer.h, T5-like: block).
LAYER_LIST_NAMES = ("layer", "layers", "h", "block", "blocks")


def top_layers_knob() -> Any:
    """The ``top_layers`` field, one definition for every method that offers it."""
    return knob(
        0,
        "Train top layers",
        "0 = all layers; N adapts only the top N transformer layers. The frozen layers below are "
        "computed once and cached, so later epochs are much faster.",
        min=0,
        max=128,
        step=1,
        short="top",
    )


def trained_layer_share(settings: Any, num_layers: int) -> float:
    """The share of the transformer layers a run computes every epoch: ``top_layers`` / L with
    "Train top layers" (the rest run once, cached), else 1.0. ``settings``: a method's config."""
    top = getattr(settings, "top_layers", 0) or 0
    return top / num_layers if 0 < top < num_layers else 1.0


def layer_cut(num_layers: int, top_layers: int, model_name: str = "the model") -> int | None:
    """Index of the first trained layer for ``top_layers`` (None: 0, every layer trains).

    The range knob cannot know the model, so the upper bound is checked here, at build time.
    """
    if top_layers == 0:
        return None
    if top_layers < 0 or top_layers >= num_layers:
        raise ConfigError(
            f"Train top layers is {top_layers}, but {model_name} has only {num_layers} layers; "
            f"use 0 for all, or at most {num_layers - 1}"
        )
    return num_layers - top_layers


def find_layer_list(model: Any) -> tuple[str, Any]:
    """The qualified name and the ``nn.ModuleList`` of a model's transformer blocks.

    Works through wrappers (PEFT's ``base_model.model...``, ``adapters``) because it searches
    the module tree: the outermost ModuleList with a usual name whose length is the config's
    layer count (models nest other lists, e.g. experts, deeper inside their blocks).
    """
    import torch  # deferred: the UI imports this module for its forms and needs no torch

    config = getattr(model, "config", None)
    expected = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.ModuleList) or name.rsplit(".", 1)[-1] not in LAYER_LIST_NAMES:
            continue
        if len(module) and (expected is None or len(module) == expected):
            return name, module
    raise ConfigError(
        f"cannot find the transformer layers of this {type(model).__name__}; set Train top layers to 0"
    )


def lower_layer_regex(model: Any, cut: int) -> str:
    """A regex (``re.fullmatch``) for every module inside the layers below ``cut``: PEFT's
    ``exclude_modules`` where ``layers_to_transform`` cannot be used."""
    name, _ = find_layer_list(model)
    return rf"{re.escape(name)}\.({'|'.join(str(i) for i in range(cut))})\..*"


def parameters_below_cut(model: Any, cut: int) -> list[tuple[str, Any]]:
    """The parameters that run before layer ``cut``: the embeddings and the layers below it.

    The embeddings are found by registration order: HF models register them before their
    layer list (BERT ``embeddings``, GPT-2 ``wte``/``wpe``, LLaMA ``embed_tokens``), and the
    pooler, final norm and head after it, so those stay trainable. A model that registers a
    later module early (OPT's final norm) only gets it frozen too: fewer trainable weights,
    never a wrong forward.
    """
    layers_name, _ = find_layer_list(model)
    prefix = layers_name + "."
    lower = tuple(f"{prefix}{i}." for i in range(cut))
    reached, out = False, []
    for name, param in model.named_parameters():
        if name.startswith(prefix):
            reached = True
            if name.startswith(lower):
                out.append((name, param))
        elif not reached:
            out.append((name, param))
    return out
