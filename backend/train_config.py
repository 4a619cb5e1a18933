"""The full description of one training run, as stored with jobs and artifacts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from backend.errors import ConfigError
from backend.methods import registry
from backend.models import DEFAULT_MODEL

QUANT_CHOICES = ("none", "8bit", "4bit")


@dataclass
class TrainConfig:
    """Everything needed to reproduce a run. JSON-serialisable via :meth:`to_dict`."""

    data: str
    method: str
    eval_data: str | None = None
    text_column: str | None = None
    text_pair_column: str | None = None
    label_column: str | None = None
    model: str = DEFAULT_MODEL
    method_config: dict[str, Any] = field(default_factory=dict)
    quant: str = "none"
    epochs: int | None = None  # None: the method's default
    batch_size: int = 32
    grad_accum: int = 1
    lr: float | None = None  # None: the method's default
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    max_length: int = 128
    max_train_samples: int | None = None
    eval_fraction: float = 0.1
    drop_invalid: bool = False
    seed: int = 0
    device: str = "auto"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(f"unknown training settings: {', '.join(unknown)}")
        return cls(**values)

    @property
    def effective_lr(self) -> float:
        return self.lr if self.lr is not None else registry.get(self.method).default_lr

    @property
    def effective_epochs(self) -> int:
        return self.epochs if self.epochs is not None else registry.get(self.method).default_epochs

    def method_settings(self) -> Any:
        """The method's typed Config (validated)."""
        return registry.get(self.method).make_config(self.method_config)


def _positive(name: str, value: float | None, *, allow_zero: bool = False) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")


def validate(cfg: TrainConfig) -> None:
    """Reject impossible or unsupported settings before anything heavy runs."""
    spec = registry.get(cfg.method)
    cfg.method_settings()
    if cfg.quant not in QUANT_CHOICES:
        raise ConfigError(f"quantization must be one of {', '.join(QUANT_CHOICES)}, not '{cfg.quant}'")
    if cfg.quant != "none" and not spec.freezes_base:
        raise ConfigError(
            f"{spec.label} updates every weight, which cannot be done on a {cfg.quant} quantized base; "
            "choose quantization 'none' or a method that keeps the base frozen (e.g. LoRA)"
        )
    for name in ("epochs", "batch_size", "grad_accum", "lr", "max_length", "max_train_samples"):
        _positive(name, getattr(cfg, name))
    _positive("weight_decay", cfg.weight_decay, allow_zero=True)
    if not 0 <= cfg.warmup_ratio < 1:
        raise ConfigError(f"warmup_ratio must be in [0, 1), got {cfg.warmup_ratio}")
    if not 0 < cfg.eval_fraction < 1:
        raise ConfigError(f"eval_fraction must be between 0 and 1, got {cfg.eval_fraction}")
    if cfg.max_length < 8 or cfg.max_length > 8192:
        raise ConfigError(f"max_length must be between 8 and 8192, got {cfg.max_length}")
    if cfg.device not in ("auto", "cpu") and not cfg.device.startswith("cuda"):
        raise ConfigError(f"device must be auto, cpu or cuda[:N], not '{cfg.device}'")
