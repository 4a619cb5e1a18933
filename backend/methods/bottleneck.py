"""Bottleneck adapters as He et al.'s unified view defines them (torch only; shipped in exports).

An adapter is a small module whose output is added to a sublayer's output ``h`` (the attention
block's or the feed-forward block's, before the residual add):

    h' = h + s · W_up σ(W_down u + b_down) + b_up

It differs from its siblings along the view's three axes: *where* (the attention output or the
FFN), *how* (sequential: ``u`` is ``h``, or ``h`` after the residual add and the layer's norm;
parallel: ``u`` is the sublayer's input ``x``, the residual stream) and the scaling ``s``.
The presets are AdapterHub's, and compute what AdapterHub 1.3.0 computed from the same weights
(``tests/fixtures/adapterhub``, to 1e-5):

- Houlsby: sequential on both sublayers, ``u = h``, swish;
- Pfeiffer: sequential on the FFN only, ``u = norm(h + x)`` (post-LN encoders; pre-LN decoders
  have no norm there, so ``u = h + x``), ReLU;
- parallel: on the FFN, ``u = x``, ReLU, ``s = 4`` (the unified view's setting).

The module reaches a model through hooks on modules every architecture of a family names the
same way (``FAMILIES``): nothing of the model's code is replaced, the base weights are untouched,
and the adapter's weights sit beside them in each layer (``bottleneck_adapters``).

This file imports torch only: an export ships it beside the weights, so that the model card's
snippet loads an adapter onto the plain base with transformers alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

ATTENTION, FFN = "attention", "ffn"
SEQUENTIAL, PARALLEL = "sequential", "parallel"
# what a sequential adapter reads: the sublayer's output, or it after the residual add and norm
OUTPUT, ADDED = "output", "added"
ACTIVATIONS = {"relu": nn.ReLU, "swish": nn.SiLU, "gelu": nn.GELU, "tanh": nn.Tanh}


@dataclass
class BottleneckConfig:
    """Where the adapters sit and what they compute; saved as ``bottleneck_config.json``."""

    size: int
    sites: list[str]  # ATTENTION and/or FFN
    insertion: str = SEQUENTIAL  # or PARALLEL
    reads: str = OUTPUT  # a sequential adapter's input: OUTPUT (h) or ADDED (norm(h + x))
    activation: str = "relu"
    scaling: float = 1.0
    layers: list[int] | None = None  # None: every layer
    # first weights, as AdapterHub's presets drew them: "bert" (both projections N(0, 0.02),
    # biases 0) or "mam" (the down-projection as nn.Linear's default, the up-projection 0)
    init: str = "bert"
    family: str = ""  # filled in when attached (a key of FAMILIES)
    extra: dict[str, Any] = field(default_factory=dict)  # what the app records beside it


PRESETS: dict[str, dict[str, Any]] = {
    "houlsby": {"sites": [ATTENTION, FFN], "reads": OUTPUT, "activation": "swish"},
    "pfeiffer": {"sites": [FFN], "reads": ADDED, "activation": "relu"},
    "parallel": {"sites": [FFN], "insertion": PARALLEL, "activation": "relu", "scaling": 4.0, "init": "mam"},
}


def preset(name: str, size: int, layers: list[int] | None = None) -> BottleneckConfig:
    return BottleneckConfig(size=size, layers=layers, **PRESETS[name])


class Bottleneck(nn.Module):
    """down-project, non-linearity, up-project, scaled: the added term of one site."""

    def __init__(self, hidden: int, size: int, activation: str, scaling: float) -> None:
        super().__init__()
        self.down = nn.Linear(hidden, size)
        self.act = ACTIVATIONS[activation]()
        self.up = nn.Linear(size, hidden)
        self.scaling = scaling

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        # in the adapter's own dtype (a bf16 or 4/8-bit base may hand it another), back in u's
        added = self.up(self.act(self.down(u.to(self.down.weight.dtype))))
        return added.to(u.dtype) * self.scaling

    def reset(self, init: str) -> None:
        """First weights: "bert" or "mam" (``BottleneckConfig.init``)."""
        with torch.no_grad():
            if init == "mam":
                self.down.reset_parameters()
                nn.init.zeros_(self.up.weight)
            else:
                nn.init.normal_(self.down.weight, std=0.02)
                nn.init.normal_(self.up.weight, std=0.02)
            nn.init.zeros_(self.down.bias)
            nn.init.zeros_(self.up.bias)


@dataclass(frozen=True)
class Site:
    """How one family's layer shows a sublayer: the module whose output is ``h`` (a tensor, or a
    tuple led by it), the module whose input is the residual stream ``x`` (``residual_arg``: its
    positional argument, or the keyword ``residual_key``), and the norm of ``h + x`` (post-LN)."""

    output: str
    residual: str
    residual_arg: int = 0
    residual_key: str | None = None
    norm: str | None = None


# model_type -> family; family -> (path of the layer list, sites by location)
FAMILIES: dict[str, tuple[str, dict[str, Site]]] = {
    "bert": ("encoder.layer", {
        ATTENTION: Site(
            "attention.output.dropout", "attention.output", 1, "input_tensor", "attention.output.LayerNorm"
        ),
        FFN: Site("output.dropout", "output", 1, "input_tensor", "output.LayerNorm"),
    }),
    "llama": ("layers", {
        ATTENTION: Site("self_attn", "input_layernorm"),
        FFN: Site("mlp", "post_attention_layernorm"),
    }),
    "gpt2": ("h", {ATTENTION: Site("attn", "ln_1"), FFN: Site("mlp", "ln_2")}),
}  # fmt: skip
MODEL_TYPES = {
    "bert": "bert", "roberta": "bert", "xlm-roberta": "bert", "electra": "bert", "camembert": "bert",
    "llama": "llama", "mistral": "llama", "qwen2": "llama", "qwen3": "llama",
    "gpt2": "gpt2",
}  # fmt: skip


def family_of(model_type: str) -> str | None:
    return MODEL_TYPES.get(model_type)


def _backbone(model: nn.Module, layers_path: str) -> nn.ModuleList:
    """The list of layers, whether ``model`` is the bare base or a model with a head."""
    for prefix in ("", "base_model.", "model.", "bert.", "roberta.", "electra.", "transformer."):
        found = _get(model, prefix + layers_path)
        if isinstance(found, nn.ModuleList):
            return found
    raise ValueError(f"no '{layers_path}' layer list in {type(model).__name__}")


def _get(module: nn.Module, path: str) -> Any:
    for part in path.split("."):
        module = getattr(module, part, None)  # type: ignore[assignment]
        if module is None:
            return None
    return module


def attach(model: nn.Module, cfg: BottleneckConfig) -> nn.ModuleDict:
    """Add the adapters to ``model``'s layers and hook them in; returns them by layer and site (also
    as ``model.bottleneck_adapters``), with their first weights (``cfg.init``)."""
    model_type = getattr(getattr(model, "config", None), "model_type", "")
    family = cfg.family or family_of(model_type)
    if family is None:
        raise ValueError(f"bottleneck adapters do not know the {model_type} architecture")
    cfg.family = family
    layers_path, sites = FAMILIES[family]
    layers = _backbone(model, layers_path)
    hidden = int(model.config.hidden_size)  # type: ignore[union-attr]
    chosen = range(len(layers)) if cfg.layers is None else cfg.layers
    # Each layer holds its own adapters ("...layer.3.bottleneck_adapters.ffn.down.weight"): they
    # move, freeze and cache with their layer. ``adapters`` indexes them all ({layer: {site: ...}},
    # weights "3.ffn.down.weight") without registering them a second time.
    adapters = nn.ModuleDict()
    for index in chosen:
        here = nn.ModuleDict()
        for where in cfg.sites:
            here[where] = Bottleneck(hidden, cfg.size, cfg.activation, cfg.scaling)
            here[where].reset(cfg.init)
            _hook(layers[index], sites[where], here[where], cfg)
        layers[index].bottleneck_adapters = here
        adapters[str(index)] = here
    model.__dict__["bottleneck_adapters"] = adapters  # a plain attribute: not a submodule of model
    model.bottleneck_config = cfg
    return adapters


def _hook(layer: nn.Module, site: Site, adapter: Bottleneck, cfg: BottleneckConfig) -> None:
    """h' = h + adapter(u), where the sublayer's output module returns h."""
    seen: dict[str, torch.Tensor] = {}

    def keep_residual(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        seen["x"] = kwargs[site.residual_key] if site.residual_key in kwargs else args[site.residual_arg]

    def add(module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        h = output[0] if isinstance(output, tuple) else output
        if cfg.insertion == PARALLEL:
            u = seen["x"]
        elif cfg.reads == ADDED:
            norm = _get(layer, site.norm) if site.norm else None
            u = h + seen["x"] if norm is None else norm(h + seen["x"])
        else:
            u = h
        h = h + adapter(u)
        return (h, *output[1:]) if isinstance(output, tuple) else h

    _get(layer, site.residual).register_forward_pre_hook(keep_residual, with_kwargs=True)
    _get(layer, site.output).register_forward_hook(add)


def save(model: nn.Module, folder: str | Path) -> None:
    """The adapters' weights (``bottleneck.safetensors``) and config (``bottleneck_config.json``)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.bottleneck_adapters.state_dict().items()}
    save_file(state, str(folder / "bottleneck.safetensors"))
    (folder / "bottleneck_config.json").write_text(
        json.dumps(asdict(model.bottleneck_config), indent=2) + "\n"
    )


def load(model: nn.Module, folder: str | Path) -> nn.Module:
    """Attach the adapters saved in ``folder`` to ``model`` (the plain base it was trained on)."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg = BottleneckConfig(**json.loads((folder / "bottleneck_config.json").read_text()))
    adapters = attach(model, cfg)
    adapters.load_state_dict(load_file(str(folder / "bottleneck.safetensors")))
    return model
