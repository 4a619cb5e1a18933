"""The full description of one training run, as stored with jobs and artifacts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from backend.catalogue import DEFAULT_MODEL
from backend.data.prepare import PreparedData, prepare
from backend.errors import ConfigError
from backend.methods import registry

QUANT_CHOICES = ("none", "8bit", "4bit")
AUTO = "auto"


def parse_auto(name: str, value: Any, kind: type) -> Any:
    """``"auto"``, None (the method's fixed default) or a number of ``kind``.

    Numbers typed as text (the CLI, a JSON client) are accepted; anything else is a
    ConfigError that says what is allowed.
    """
    if value is None or value == AUTO:
        return value
    what = "an integer" if kind is int else "a number"
    wrong = ConfigError(f"{name} must be 'auto' or {what}, not {value!r}")
    if isinstance(value, bool):
        raise wrong
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise wrong from None
    if not isinstance(number, int | float) or (kind is int and number != int(number)):
        raise wrong
    return kind(number)


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
    # "auto": sized from the data (enough optimizer steps); None: the method's fixed default.
    epochs: int | str | None = AUTO
    batch_size: int = 32
    grad_accum: int = 1
    # "auto": a short search on the training data picks it; None: the method's fixed default.
    lr: float | str | None = AUTO
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    # Stop after this many evaluations without improvement (0: never stop early).
    early_stopping_patience: int = 3
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
        """The learning rate to train with; "auto" must have been resolved (see backend.training.autotune)."""
        if self.lr == AUTO:
            raise RuntimeError("learning rate 'auto' is resolved before training starts")
        return float(self.lr) if self.lr is not None else registry.get(self.method).default_lr

    @property
    def effective_epochs(self) -> int:
        """The epoch count to train for; "auto" must have been resolved (see backend.training.autotune)."""
        if self.epochs == AUTO:
            raise RuntimeError("epochs 'auto' are resolved before training starts")
        return int(self.epochs) if self.epochs is not None else registry.get(self.method).default_epochs

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
    cfg.epochs = parse_auto("epochs", cfg.epochs, int)
    cfg.lr = parse_auto("learning rate", cfg.lr, float)
    for name in ("batch_size", "grad_accum", "max_length", "max_train_samples"):
        _positive(name, getattr(cfg, name))
    for name in ("epochs", "lr"):
        if getattr(cfg, name) != AUTO:
            _positive(name, getattr(cfg, name))
    _positive("early_stopping_patience", cfg.early_stopping_patience, allow_zero=True)
    _positive("weight_decay", cfg.weight_decay, allow_zero=True)
    if not 0 <= cfg.warmup_ratio < 1:
        raise ConfigError(f"warmup_ratio must be in [0, 1), got {cfg.warmup_ratio}")
    if not 0 < cfg.eval_fraction < 1:
        raise ConfigError(f"eval_fraction must be between 0 and 1, got {cfg.eval_fraction}")
    if cfg.max_length < 8 or cfg.max_length > 8192:
        raise ConfigError(f"max_length must be between 8 and 8192, got {cfg.max_length}")
    if cfg.device not in ("auto", "cpu") and not cfg.device.startswith("cuda"):
        raise ConfigError(f"device must be auto, cpu or cuda[:N], not '{cfg.device}'")


def load_data(cfg: TrainConfig) -> PreparedData:
    """The run's data exactly as training will see it (the same checks, split and limits)."""
    return prepare(
        cfg.data,
        cfg.eval_data,
        text_column=cfg.text_column,
        text_pair_column=cfg.text_pair_column,
        label_column=cfg.label_column,
        eval_fraction=cfg.eval_fraction,
        seed=cfg.seed,
        drop_invalid=cfg.drop_invalid,
        max_train_samples=cfg.max_train_samples,
    )
