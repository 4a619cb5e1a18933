"""Reading a bottleneck adapter that AdapterHub (``adapters``) saved, onto our own module.

Runs trained before the workbench wrote its own adapters (issue 45) hold AdapterHub's files:
``adapter_config.json`` (its ``BnConfig`` fields, ``hidden_size``) and ``adapter.safetensors``
(or ``pytorch_adapter.bin``) with names such as
``bert.encoder.layer.3.output.adapters.workbench.adapter_down.0.weight``. Those runs keep
loading: the config becomes a :class:`BottleneckConfig` and each weight moves to its site. An
option AdapterHub offered but our module does not compute (layer norms of its own, gating, PHM
layers, ...) is refused with its name rather than loaded into something that computes otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from backend.methods.bottleneck import ADDED, ATTENTION, FFN, OUTPUT, PARALLEL, SEQUENTIAL, BottleneckConfig

WEIGHT = re.compile(
    r"(?:^|\.)(?:layer|layers|h)\.(\d+)\.(attention\.output|attention_adapters|output|output_adapters)"
    r"\.adapters\.[^.]+\.adapter_(down\.0|up)\.(weight|bias)$"
)
SITES = {
    "attention.output": ATTENTION,
    "attention_adapters": ATTENTION,
    "output": FFN,
    "output_adapters": FFN,
}
PARTS = {"down.0": "down", "up": "up"}
# AdapterHub options and the value under which our module computes the same thing
SAME_AS_OURS: dict[str, Any] = {
    "ln_before": False, "ln_after": False, "use_gating": False, "phm_layer": False, "inv_adapter": None,
    "cross_adapter": False, "residual_before_ln": True, "adapter_residual_before_ln": False,
    "original_ln_after": True, "stochastic_depth": 0.0,
}  # fmt: skip


def is_adapterhub(folder: Path) -> bool:
    """Whether ``folder`` holds an adapter AdapterHub saved."""
    return (folder / "adapter_config.json").is_file() and any(
        (folder / name).is_file() for name in ("adapter.safetensors", "pytorch_adapter.bin")
    )


def read(folder: Path) -> tuple[BottleneckConfig, dict[str, Any]]:
    """Our config and state dict (keys "3.ffn.down.weight") for the adapter in ``folder``."""
    saved = json.loads((folder / "adapter_config.json").read_text())
    state = _weights(folder)
    sites, layers, ours = set(), set(), {}
    for name, tensor in state.items():
        found = WEIGHT.search(name)
        if found is None:
            raise ValueError(f"{folder.name}: AdapterHub weight '{name}' names no adapter site")
        layer, where, part, kind = found.groups()
        sites.add(SITES[where])
        layers.add(int(layer))
        ours[f"{layer}.{SITES[where]}.{PARTS[part]}.{kind}"] = tensor
    cfg = config(saved["config"], int(saved["hidden_size"]), sorted(layers))
    if set(cfg.sites) != sites:
        raise ValueError(
            f"{folder.name}: its config places adapters at {cfg.sites}, its weights at {sorted(sites)}"
        )
    return cfg, ours


def config(bn: dict[str, Any], hidden: int, layers: list[int]) -> BottleneckConfig:
    """An AdapterHub ``BnConfig`` (as saved) as our config; ValueError for what we do not compute."""
    different = [k for k, same in SAME_AS_OURS.items() if k in bn and bn[k] != same]
    if different:
        raise ValueError(f"this AdapterHub adapter uses {', '.join(different)}, which the workbench's "
                         "bottleneck adapters do not compute")  # fmt: skip
    if not isinstance(bn.get("scaling", 1.0), (int, float)):
        raise ValueError(f"this AdapterHub adapter learns its scaling ('{bn['scaling']}'); ours is fixed")
    sites = [s for s, on in ((ATTENTION, bn["mh_adapter"]), (FFN, bn["output_adapter"])) if on]
    return BottleneckConfig(
        size=max(1, int(hidden // bn["reduction_factor"])),
        sites=sites,
        insertion=PARALLEL if bn.get("is_parallel") else SEQUENTIAL,
        reads=ADDED if bn.get("original_ln_before") else OUTPUT,
        activation=str(bn["non_linearity"]).lower(),
        scaling=float(bn.get("scaling", 1.0)),
        layers=layers,
        init="mam" if bn.get("init_weights") == "mam_adapter" else "bert",
    )


def _weights(folder: Path) -> dict[str, Any]:
    if (folder / "adapter.safetensors").is_file():
        from safetensors.torch import load_file

        return load_file(str(folder / "adapter.safetensors"))
    import torch

    return torch.load(folder / "pytorch_adapter.bin", map_location="cpu", weights_only=True)
