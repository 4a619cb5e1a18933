"""The one place methods are registered, in UI order. A duplicate key fails at import."""

from __future__ import annotations

from backend.errors import ConfigError
from backend.methods import adapter, full, ia3, lora, prefix, probe, prompt, ptuning
from backend.methods.base import MethodSpec

_REGISTRY: dict[str, MethodSpec] = {}


def register(spec: MethodSpec) -> None:
    if spec.key in _REGISTRY:
        raise RuntimeError(f"method '{spec.key}' registered twice")
    _REGISTRY[spec.key] = spec


for _module in (probe, full, lora, prompt, prefix, ptuning, adapter, ia3):
    register(_module.SPEC)


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
