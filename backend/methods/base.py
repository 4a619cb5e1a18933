"""What every adaptation method is: a Config dataclass with UI metadata + a build function.

The metadata (``knob``, ``check_range``, ``fields_info``) lives in ``backend.knobs``: the common
training settings and the tasks' settings use the same kind, so the UI's controls, the CLI's
flags and validation all come from one definition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.catalogue import ModelInfo
from backend.errors import ConfigError
from backend.knobs import FIELD_TYPES as FIELD_TYPES
from backend.knobs import check_range as check_range
from backend.knobs import fields_info as fields_info
from backend.knobs import in_range as in_range
from backend.knobs import knob as knob
from backend.knobs import range_text as range_text
from backend.knobs import unknown_settings as unknown_settings
from backend.knobs import value_type as value_type
from backend.tasks.base import Task


class MethodConfig:
    """Base of every method's Config: values are range-checked when it is made (as peft's
    ``PeftConfig.__post_init__`` checks its options)."""

    def __post_init__(self) -> None:
        check_range(self)


@dataclass(frozen=True)
class BuildContext:
    """Facts a build function may need besides the model itself."""

    info: ModelInfo
    label_names: list[str]
    # peft.TaskType's name for the run's head (the task's: SEQ_CLS, TOKEN_CLS)
    peft_task_type: str = "SEQ_CLS"


# The learning-rate search looks further down than up: by default no candidate above the
# method's default times this (half a decade). A short search favours rates that descend fast and
# then plateau, and the rates it picked above that line lost the run wherever a full run checked
# them (bench/LR_SEARCH.md, "Candidates above the default"): LoRA at 1e-2 (default 2e-3) on SST-2,
# SMS spam and emotion, IA3 at 0.1 on SST-2, full fine-tuning at 3e-4 (default 5e-5) on SST-2
# and SMS spam. One step above the default still won where checked (full fine-tuning at 1e-4,
# adapters at 3e-3 on SST-2), so the window keeps it. That evidence came from LoRA, IA3 and full
# fine-tuning: a method whose good rates lie higher sets its own ``lr_window`` (issue 51), with
# the figures that justify it beside it.
MAX_ABOVE_DEFAULT = 10**0.5


@dataclass(frozen=True)
class MethodSpec:
    """One registered adaptation method: every fact the rest of the app asks about it."""

    key: str
    label: str  # what the UI shows
    config_cls: type[MethodConfig]
    build: Callable[[Any, Any, BuildContext], Any]
    default_lr: float
    description: str
    library: str  # "peft", "bottleneck" (ours, backend/methods/bottleneck.py), "transformers" or "own"
    freezes_base: bool = True
    # It may train on a 4/8-bit quantized base (only a method that keeps the base frozen can:
    # quantized weights cannot take updates; ``registry.register`` checks).
    quantizable: bool = True
    default_epochs: int = 3
    # Log-spaced learning rates the automatic search tries (see backend.training.lr_search); a method
    # whose good range moves with a setting gives ``lr_candidates_for`` instead. None lies above
    # ``lr_window`` times ``default_lr`` (``registry.register`` checks; why: issues 36 and 51).
    lr_candidates: tuple[float, ...] = ()
    lr_window: float = MAX_ABOVE_DEFAULT
    lr_candidates_for: Callable[[Any], tuple[float, ...]] | None = None
    # Weights that learn at a multiple of the run's rate, by a part of their name ({} : none):
    # e.g. an MLP that produces the trained vectors, beside a new head that needs the full rate.
    lr_scales: Callable[[Any], dict[str, float]] | None = None
    # Which runner trains it (``backend.run.RUNNERS``): "loop" trains through the model's
    # forward pass; "cached_features" trains heads on cached features of a frozen encoder.
    runner: str = "loop"
    resumable: bool = True  # writes per-epoch checkpoints a failed run can resume from
    mergeable: bool = False  # its update can be folded into the base weights (a plain model)
    # The Config field that best tells two runs of the method apart: always shown in run
    # names ("lora r=8 · sst2"); ``name_text`` may replace the whole text (None: not this run).
    name_knob: str | None = None
    name_text: Callable[[Any], str | None] | None = None
    # Config fields the CLI offers as their own flags (``--rank 8``); ``cli_words`` lets a flag
    # take a word that stands for other settings (``--layer all``: {"sweep_layers": True}).
    cli_flags: tuple[str, ...] = ()
    cli_words: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, hash=False, compare=False)
    # Its PEFT wrapper hands the model input *embeddings* (virtual tokens prepended), not token
    # ids: a decoder's head then cannot find the last real token by the pad id and reads the
    # last position, so on a decoder its tokenizer pads on the left (see ``padding_side``).
    feeds_embeddings: bool = False
    # It may train with gradient checkpointing (recompute activations in the backward pass).
    gradient_checkpointing: bool = True
    # Why it cannot train a given base model (None: it can), asked before any weights load.
    refuses: Callable[[ModelInfo], str | None] | None = None
    # Why it cannot train a given task (None: it can): where methods and tasks meet. Asked when a
    # run names its task and again once "auto" has read the data; the catalogue lists the reasons.
    refuses_task: Callable[[Task], str | None] | None = None

    def padding_side(self, info: ModelInfo) -> str | None:
        """The side its tokenizer must pad on for ``info`` (None: as the tokenizer ships)."""
        return "left" if info.is_decoder and self.feeds_embeddings else None

    def check_model(self, info: ModelInfo) -> None:
        """Raise a ConfigError that says why, when this method cannot train ``info``."""
        reason = self.refuses(info) if self.refuses is not None else None
        if reason:
            raise ConfigError(reason)

    def task_refusal(self, task: Task) -> str | None:
        """Why this method cannot train ``task``, in a sentence; None when it can."""
        reason = self.refuses_task(task) if self.refuses_task is not None else None
        return f"{self.label} cannot train {task.label.lower()}: {reason}" if reason else None

    def check_task(self, task: Task) -> None:
        """Raise a ConfigError that says why, when this method cannot train ``task``."""
        reason = self.task_refusal(task)
        if reason:
            raise ConfigError(f"{reason}; choose another method")

    @property
    def probes_layers(self) -> bool:
        """Its runs train heads on a frozen encoder's cached layer features (the Probing tab)."""
        return self.runner == "cached_features"

    def learning_rates(self, config: Any) -> tuple[float, ...]:
        """The candidates for the automatic learning-rate search, given the method's Config."""
        if self.lr_candidates_for is not None:
            return self.lr_candidates_for(config)
        return self.lr_candidates or (self.default_lr,)

    def learning_rate_scales(self, config: Any) -> dict[str, float]:
        """Multipliers of the run's learning rate by weight-name part, given the method's Config."""
        return self.lr_scales(config) if self.lr_scales is not None else {}

    def make_config(self, values: dict[str, Any] | None = None) -> Any:
        """Build this method's config from a dict, rejecting unknown keys by name."""
        values = dict(values or {})
        unknown = unknown_settings(self.config_cls, values)
        if unknown:
            names = sorted(f.name for f in dataclasses.fields(self.config_cls))
            raise ConfigError(
                f"{self.label} has no setting {', '.join(unknown)}; it has: {', '.join(names) or 'none'}"
            )
        return self.config_cls(**values)

    def knob_text(self, config: Any) -> str:
        """Short text of a run's settings: the name knob plus every setting changed from its
        default ("r=16 dropout=0.2"), each abbreviated as its field declares; a value with a
        word reads as the word ("layer auto")."""
        special = self.name_text(config) if self.name_text is not None else None
        if special is not None:
            return special
        parts = []
        # the name knob leads: it is what tells the method's runs apart ("layer=3 head=mlp")
        ordered = sorted(dataclasses.fields(config), key=lambda f: f.name != self.name_knob)
        for f in ordered:
            value = getattr(config, f.name)
            if f.name == self.name_knob or value != f.default:
                name = f.metadata.get("short") or f.name
                word = (f.metadata.get("value_words") or {}).get(value)
                parts.append(f"{name} {word}" if word else f"{name}={value}")
        return " ".join(parts)


def freeze(model: Any) -> None:
    for p in model.parameters():
        p.requires_grad_(False)


def label_virtual_tokens(model: Any, virtual: int, ctx: BuildContext) -> Any:
    """Per-token labels for a model with ``virtual`` prompt embeddings in front of the input.

    PEFT (0.21) prepends the prompts but passes per-token labels on as they are, so the loss
    fails on mismatched lengths. Here the labels get ``virtual`` ignored positions in front,
    and the virtual tokens' outputs are dropped from the logits. A reloaded export has no hooks:
    its logits keep them, and the per-token task reads the last positions (as the card says).
    """
    if ctx.peft_task_type != "TOKEN_CLS":
        return model
    import torch

    def pad(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        labels = kwargs.get("labels")
        if labels is not None and labels.dim() == 2:
            kwargs["labels"] = torch.cat([labels.new_full((labels.shape[0], virtual), -100), labels], 1)
        return args, kwargs

    def trim(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> Any:
        output.logits = output.logits[:, virtual:]
        return output

    model.register_forward_pre_hook(pad, with_kwargs=True)
    model.register_forward_hook(trim, with_kwargs=True)
    return model
