"""What a sweep tries, in plain terms: grid axes, search spaces and the Pareto front.

No database and no Optuna here (those live in ``jobs.sweeps``): this module turns
``rank=2,8,32`` into checked values, a grid into the configs of its trials, a knob's
metadata into a search range, and the trials' results into Pareto flags.

A sweep axis is either one of the method's own settings (``rank``, ``prompt_length``) or one
of the run settings every method shares (``lr``, ``batch_size``, ``epochs``...), checked
against the same metadata as a single run, so a bad value fails before any job is queued.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any

from backend.errors import ConfigError
from backend.knobs import fields_info, in_range, range_text
from backend.methods import registry
from backend.training.config import TrainConfig

# Run settings a sweep may vary (the rest describe the data or the machine, not the run).
RUN_AXES = ("lr", "epochs", "batch_size", "max_length", "weight_decay", "warmup_ratio", "seed", "quant")
MAX_GRID_POINTS = 64  # a typo such as rank=1..256 should not queue 256 jobs
# Knobs searched on a log scale: sizes and rates, where 2->4 matters as much as 32->64.
LOG_SCALE = ("lr", "rank", "alpha", "bottleneck", "prompt_length", "encoder_hidden", "mlp_hidden")


@dataclasses.dataclass(frozen=True)
class Axis:
    """One swept setting: its name, where it goes (method settings or run settings), values."""

    name: str
    values: tuple[Any, ...]
    method_setting: bool


def _fields(method: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    spec = registry.get(method)
    own = {f["name"]: f for f in fields_info(spec.config_cls)}
    run = {f["name"]: f for f in fields_info(TrainConfig) if f["name"] in RUN_AXES}
    return own, run


def _convert(info: dict[str, Any], text: str) -> Any:
    """One typed value of a setting from its text (the same types as the CLI's flags)."""
    if info["name"] in ("lr", "epochs") and text == "auto":
        return "auto"
    kind = info.get("type", "str")
    try:
        if kind == "int":
            number = float(text)
            if number != int(number):
                raise ValueError
            return int(number)
        if kind == "float":
            return float(text)
    except ValueError:
        raise ConfigError(
            f"{info['label']}: {text!r} is not {'an integer' if kind == 'int' else 'a number'}"
        ) from None
    if kind == "bool":
        if text.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            raise ConfigError(f"{info['label']}: {text!r} is not true or false")
        return text.lower() in ("true", "1", "yes", "on")
    return text


def parse_axis(method: str, text: str) -> Axis:
    """``"rank=2,8,32"`` -> Axis("rank", (2, 8, 32)), each value checked like a single run's."""
    name, sep, values = text.partition("=")
    name = name.strip().replace("-", "_")
    own, run = _fields(method)
    if not sep or not values.strip():
        raise ConfigError(f"a grid axis is NAME=V1,V2,... (e.g. rank=2,8,32), not {text!r}")
    if name not in own and name not in run:
        allowed = ", ".join([*own, *run])
        raise ConfigError(f"{registry.get(method).label} has no setting {name!r} to sweep; one of: {allowed}")
    info = own.get(name) or run[name]
    parsed = tuple(_convert(info, v.strip()) for v in values.split(",") if v.strip())
    if len(set(map(str, parsed))) != len(parsed):
        raise ConfigError(f"{info['label']}: a value is listed twice in {text!r}")
    return Axis(name, parsed, name in own)


def grid_points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, first axis slowest (one or two axes)."""
    if not axes:
        raise ConfigError("a grid needs at least one axis, e.g. --grid rank=2,8,32")
    if len(axes) > 2:
        raise ConfigError("a grid sweeps one or two settings; use a search (--trials N) for more")
    if len({a.name for a in axes}) != len(axes):
        raise ConfigError("each setting may be one grid axis only")
    points = [
        dict(zip([a.name for a in axes], combo, strict=True))
        for combo in itertools.product(*(a.values for a in axes))
    ]
    if len(points) > MAX_GRID_POINTS:
        raise ConfigError(f"the grid has {len(points)} points; at most {MAX_GRID_POINTS} (or use a search)")
    return points


def apply_point(base: dict[str, Any], axes: Sequence[Axis], point: dict[str, Any]) -> dict[str, Any]:
    """The trial's TrainConfig dict: ``base`` with the point's values in their places."""
    config = {**base, "method_config": dict(base.get("method_config") or {})}
    for axis in axes:
        if axis.method_setting:
            config["method_config"][axis.name] = point[axis.name]
        else:
            config[axis.name] = point[axis.name]
    return config


def search_range(method: str, text: str) -> dict[str, Any]:
    """How Optuna samples a setting: {name, kind: int|float|categorical, low, high, log, choices}.

    ``text`` is a setting's name, optionally with bounds: ``lr=1e-5:1e-2``, ``rank=2:64``
    (checked against the setting's own range). Without them: the learning rate spans the
    method's candidates (one step wider each side), a number its declared range.
    """
    name, _, bounds = text.partition("=")
    name = name.strip().replace("-", "_")
    own, run = _fields(method)
    info = own.get(name) or run.get(name)
    if info is None:
        raise ConfigError(f"{registry.get(method).label} has no setting {name!r} to search")
    if info.get("choices") or info.get("type") == "bool":
        if bounds:
            raise ConfigError(f"{info['label']} is a choice: search it without bounds")
        choices = list(info["choices"]) if info.get("choices") else [False, True]
        return {"name": name, "kind": "categorical", "choices": choices}
    kind = "int" if info.get("type") == "int" else "float"
    if name == "lr":
        lrs = registry.get(method).lr_candidates
        low, high = min(lrs) / 3, max(lrs) * 3
    else:
        low, high = info.get("min"), info.get("max")
    if bounds:
        low, high = (
            (_convert(info, b.strip()) for b in bounds.split(":", 1)) if ":" in bounds else (None, None)
        )
        if low is None or high is None or not low < high:
            raise ConfigError(f"bounds are LOW:HIGH with LOW < HIGH, e.g. {name}=1:64, not {bounds!r}")
        for bound in (low, high):
            if not in_range(bound, info):
                raise ConfigError(f"{info['label']} must be {range_text(info)}, got {bound}")
    if low is None or high is None:
        raise ConfigError(f"{info['label']} has no bounded range; give one, e.g. {name}=1:10")
    log = name in LOG_SCALE and low > 0
    return {"name": name, "kind": kind, "low": low, "high": high, "log": log}


def pareto_flags(points: Sequence[dict[str, float | None]], objectives: dict[str, str]) -> list[bool]:
    """Which points no other point dominates. ``objectives``: name -> "max" or "min".

    A point dominates another when it is at least as good in every objective and better in
    one. Points missing a value (failed, pruned) are never on the front.
    """

    def complete(p: dict[str, float | None]) -> bool:
        return all(p.get(k) is not None and not math.isnan(float(p[k])) for k in objectives)  # type: ignore[arg-type]

    def signed(p: dict[str, float | None], k: str) -> float:
        return float(p[k]) if objectives[k] == "max" else -float(p[k])  # type: ignore[arg-type]

    def dominates(a: dict[str, float | None], b: dict[str, float | None]) -> bool:
        pairs = [(signed(a, k), signed(b, k)) for k in objectives]
        return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)

    ok = [complete(p) for p in points]
    return [
        ok[i] and not any(ok[j] and dominates(points[j], points[i]) for j in range(len(points)) if j != i)
        for i in range(len(points))
    ]


def point_text(method: str, point: dict[str, Any]) -> str:
    """ "r=8 lr=0.001": a trial's swept values, with the settings' short names."""
    shorts = {f.name: f.metadata.get("short") for f in dataclasses.fields(registry.get(method).config_cls)}
    parts = []
    for name, value in point.items():
        label = shorts.get(name) or name
        parts.append(f"{label}={value:g}" if isinstance(value, float) else f"{label}={value}")
    return " ".join(parts)
