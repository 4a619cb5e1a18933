"""What every adaptation method is: a Config dataclass with UI metadata + a build function."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.catalogue import ModelInfo
from backend.errors import ConfigError


def knob(
    default: Any,
    label: str,
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    step: float | None = None,
    choices: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field carrying what the UI needs to render it (slider, dropdown, checkbox)."""
    meta = {"label": label, "help": help, "min": min, "max": max, "step": step, "choices": choices}
    return field(default=default, metadata=meta)


def check_range(cfg: Any) -> None:
    """Reject values outside a field's declared min/max/choices, naming the field and range."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        lo, hi, choices = f.metadata.get("min"), f.metadata.get("max"), f.metadata.get("choices")
        if choices is not None and value not in choices:
            raise ConfigError(f"{f.metadata['label']} must be one of {', '.join(choices)}, not {value!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ConfigError(f"{f.metadata['label']} must be between {lo} and {hi}, got {value}")


@dataclass(frozen=True)
class BuildContext:
    """Facts a build function may need besides the model itself."""

    info: ModelInfo
    label_names: list[str]


@dataclass(frozen=True)
class MethodSpec:
    """One registered adaptation method."""

    key: str
    label: str  # what the UI shows
    config_cls: type
    build: Callable[[Any, Any, BuildContext], Any]
    default_lr: float
    description: str
    library: str  # "peft", "adapters", "transformers" or "own"
    freezes_base: bool = True
    default_epochs: int = 3
    # Log-spaced learning rates the automatic search tries (see backend.training.lr_search); a method
    # whose good range moves with a setting gives ``lr_candidates_for`` instead.
    lr_candidates: tuple[float, ...] = ()
    lr_candidates_for: Callable[[Any], tuple[float, ...]] | None = None
    # Which runner trains it (``backend.run.RUNNERS``): "loop" trains through the model's
    # forward pass; "probe" trains heads on cached features of a frozen encoder.
    runner: str = "loop"
    resumable: bool = True  # writes per-epoch checkpoints a failed run can resume from
    mergeable: bool = False  # its update can be folded into the base weights (a plain model)

    def learning_rates(self, config: Any) -> tuple[float, ...]:
        """The candidates for the automatic learning-rate search, given the method's Config."""
        if self.lr_candidates_for is not None:
            return self.lr_candidates_for(config)
        return self.lr_candidates or (self.default_lr,)

    def make_config(self, values: dict[str, Any] | None = None) -> Any:
        """Build this method's config from a dict, rejecting unknown keys by name."""
        values = dict(values or {})
        names = {f.name for f in dataclasses.fields(self.config_cls)}
        unknown = sorted(set(values) - names)
        if unknown:
            raise ConfigError(
                f"{self.label} has no setting {', '.join(unknown)}; "
                f"it has: {', '.join(sorted(names)) or 'none'}"
            )
        return self.config_cls(**values)


def freeze(model: Any) -> None:
    for p in model.parameters():
        p.requires_grad_(False)
