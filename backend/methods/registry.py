"""The one place methods are registered, in UI order. A duplicate key, or a spec whose
facts contradict each other, fails at import."""

from __future__ import annotations

import dataclasses

from backend.errors import ConfigError
from backend.methods import adapter, full, ia3, lora, prefix, probe, prompt, ptuning
from backend.methods.base import MethodSpec, in_range

_REGISTRY: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> None:
    if spec.key in _REGISTRY:
        raise RuntimeError(f"method '{spec.key}' registered twice")
    if spec.quantizable and not spec.freezes_base:
        raise RuntimeError(f"method '{spec.key}' updates every weight, so it cannot train a quantized base")
    names = {f.name for f in dataclasses.fields(spec.config_cls)}
    named = (
        {spec.name_knob} - {None}
        | set(spec.cli_flags)
        | {setting for words in spec.cli_words.values() for values in words.values() for setting in values}
    )
    if named - names:
        raise RuntimeError(f"method '{spec.key}' names settings its Config lacks: {sorted(named - names)}")
    # a value a word stands for must be one validation accepts, or "--layer auto" would be refused
    for f in dataclasses.fields(spec.config_cls):
        for value, word in (f.metadata.get("value_words") or {}).items():
            if not in_range(value, f.metadata):
                raise RuntimeError(f"'{spec.key}': '{word}' stands for {value}, outside {f.name}'s range")
    too_high = [lr for lr in spec.lr_candidates if lr > spec.default_lr * spec.lr_window * (1 + 1e-9)]
    if too_high:
        raise RuntimeError(
            f"method '{spec.key}' searches {too_high}, above {spec.lr_window:.2f} x its default "
            f"{spec.default_lr:g} (its lr_window)"
        )
    if set(spec.cli_words) - set(spec.cli_flags):
        raise RuntimeError(f"method '{spec.key}' gives words to flags it does not offer: {spec.cli_words}")
    _REGISTRY[spec.key] = spec


for _module in (probe, full, lora, prompt, prefix, ptuning, adapter, ia3):
    register(_module.SPEC)

DEFAULT = lora.SPEC.key  # what the UI starts with


def get(key: str) -> MethodSpec:
    """The method registered under ``key``; a ConfigError lists the valid keys."""
    try:
        return _REGISTRY[key]
    except KeyError:
        raise ConfigError(f"unknown method '{key}'; choose one of: {', '.join(_REGISTRY)}") from None


def all_methods() -> list[MethodSpec]:
    return list(_REGISTRY.values())


def keys() -> list[str]:
    return list(_REGISTRY)
