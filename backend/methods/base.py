"""What every adaptation method is: a Config dataclass with UI metadata + a build function.

``knob`` and ``check_range`` also describe and check the common training settings
(``backend.training.config.TrainConfig``): one kind of metadata for every setting, so the
UI's controls, the CLI's flags and validation all come from the same definition.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field
from typing import Any

from backend.catalogue import ModelInfo
from backend.errors import ConfigError

FIELD_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}


def knob(
    default: Any,
    label: str,
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    step: float | None = None,
    choices: tuple[str, ...] | None = None,
    choice_labels: tuple[str, ...] | None = None,
    exclusive: tuple[str, ...] = (),
    short: str | None = None,
    flag: str | None = None,
    value_words: dict[Any, str] | None = None,
) -> Any:
    """A dataclass field carrying what the UI and the CLI need to offer it and check it.

    ``min``/``max`` bound numbers (inclusive unless named in ``exclusive``); ``choices`` are
    the allowed values (``choice_labels``: how the UI shows them); ``short`` abbreviates
    the setting in run names (``r=8``); ``flag`` is the CLI name when it is not the field's;
    ``value_words`` names values that stand for a behaviour ({-2: "auto"}): run names read
    "layer auto" and the CLI takes the word for the value.
    ``default`` may be ``dataclasses.MISSING`` for a setting every run must give.
    """
    meta = {
        "label": label,
        "help": help,
        "min": min,
        "max": max,
        "step": step,
        "choices": choices,
        "choice_labels": choice_labels,
        "exclusive": exclusive,
        "short": short,
        "flag": flag,
        "value_words": dict(value_words or {}),
    }
    return field(default=default, metadata=meta)


def range_text(meta: typing.Mapping[str, Any]) -> str:
    """The allowed range in words: "between 1 and 256", "> 0", ">= 0 and < 1"."""
    lo, hi, open_ends = meta.get("min"), meta.get("max"), meta.get("exclusive") or ()
    if lo is not None and hi is not None and not open_ends:
        return f"between {lo} and {hi}"
    parts = []
    if lo is not None:
        parts.append(f"{'>' if 'min' in open_ends else '>='} {lo}")
    if hi is not None:
        parts.append(f"{'<' if 'max' in open_ends else '<='} {hi}")
    return " and ".join(parts)


def in_range(value: float, meta: typing.Mapping[str, Any]) -> bool:
    lo, hi, open_ends = meta.get("min"), meta.get("max"), meta.get("exclusive") or ()
    if lo is not None and (value < lo or (value == lo and "min" in open_ends)):
        return False
    return not (hi is not None and (value > hi or (value == hi and "max" in open_ends)))


def check_range(cfg: Any) -> None:
    """Reject values outside a field's declared min/max/choices, naming the field and range.

    Only fields made with :func:`knob` are checked; None and text (e.g. "auto") pass the
    numeric check.
    """
    for f in dataclasses.fields(cfg):
        meta = f.metadata
        if "label" not in meta:
            continue
        value = getattr(cfg, f.name)
        choices = meta.get("choices")
        if choices is not None and value not in choices:
            raise ConfigError(f"{meta['label']} must be one of {', '.join(choices)}, not {value!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not in_range(value, meta):
            raise ConfigError(f"{meta['label']} must be {range_text(meta)}, got {value}")


def value_type(hint: Any) -> type:
    """The value type a form or flag uses: ``int | str | None`` ("auto" allowed) reads as int."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [m for m in typing.get_args(hint) if m is not type(None)]
        return next((m for m in members if m in FIELD_TYPES), str)
    return hint if hint in FIELD_TYPES else str


def fields_info(cls: type) -> list[dict[str, Any]]:
    """Every :func:`knob` field of ``cls`` as a plain dict (what forms and flags are made from)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if "label" not in meta:
            continue
        kind = value_type(hints.get(f.name, str))
        out.append(
            {
                "name": f.name,
                "label": meta["label"],
                "help": meta["help"],
                "type": FIELD_TYPES[kind],
                # a number that may also be a word ("auto"): ``int | str | None``
                "accepts_text": kind is not str and str in typing.get_args(hints.get(f.name)),
                "default": None if f.default is MISSING else f.default,
                "required": f.default is MISSING,
                "min": meta["min"],
                "max": meta["max"],
                "step": meta["step"],
                "choices": list(meta["choices"]) if meta["choices"] else None,
                "choice_labels": list(meta["choice_labels"]) if meta["choice_labels"] else None,
                "exclusive": list(meta["exclusive"]),  # bounds the value may not equal
                "flag": meta["flag"] or f.name,
                # word -> value ("auto": -2): JSON-safe keys for the API, the direction the CLI reads
                "value_words": {word: value for value, word in (meta.get("value_words") or {}).items()},
            }
        )
    return out


def unknown_settings(cls: type, values: typing.Mapping[str, Any]) -> list[str]:
    """The keys of ``values`` that name no field of the dataclass ``cls``, sorted (for errors)."""
    return sorted(set(values) - {f.name for f in dataclasses.fields(cls)})


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

    def padding_side(self, info: ModelInfo) -> str | None:
        """The side its tokenizer must pad on for ``info`` (None: as the tokenizer ships)."""
        return "left" if info.is_decoder and self.feeds_embeddings else None

    def check_model(self, info: ModelInfo) -> None:
        """Raise a ConfigError that says why, when this method cannot train ``info``."""
        reason = self.refuses(info) if self.refuses is not None else None
        if reason:
            raise ConfigError(reason)

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
