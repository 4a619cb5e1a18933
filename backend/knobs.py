"""Settings with metadata: a dataclass field made with :func:`knob` carries its label, help, range
and choices, from which the UI's controls, the CLI's flags and validation are made. Methods'
``Config``, tasks' ``Settings`` and the common training settings all use it."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import MISSING, field
from typing import Any

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
