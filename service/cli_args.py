"""The training flags shared by ``train`` and ``submit``, made from the settings' metadata.

Every common setting of :class:`~backend.training.config.TrainConfig` becomes a flag
(``batch_size`` -> ``--batch-size``; its label, range and help come from its ``knob``).
``--method`` lists the registered methods; each method's shortcut flags (``--rank``,
``--layer all``) come from its ``MethodSpec.cli_flags``; ``--set KEY=VALUE`` reaches any
other method setting. Each task's own settings (``Task.settings_cls``) become flags too
(``--tag-scheme``), collected into ``task_config``. Nothing here names a method, a task or a
setting.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

from backend.errors import ConfigError
from backend.knobs import fields_info, range_text
from backend.methods import registry
from backend.methods.base import MethodSpec
from backend.tasks import registry as tasks
from backend.training.config import TrainConfig

PYTHON_TYPES: dict[str, type] = {"int": int, "float": float, "str": str}
FIXED_DEFAULT = "default"  # --lr default: the method's fixed value instead of "auto"


@dataclass(frozen=True)
class ShortcutFlag:
    """A method setting with its own flag, and the methods that have it."""

    name: str  # the Config field (and the flag: --prompt-length)
    label: str
    kind: str  # "int" | "float" | "str"
    methods: tuple[str, ...]
    words: dict[str, dict[str, dict[str, Any]]]  # method -> word -> the settings it stands for

    @property
    def flag(self) -> str:
        return _flag(self.name)

    @property
    def has_words(self) -> bool:
        """Some method gives it words: argparse then passes text, converted here."""
        return any(self.words.values())


def shortcut_flags() -> list[ShortcutFlag]:
    """Every method setting some method offers as a flag, in registry order."""
    found: dict[str, ShortcutFlag] = {}
    for spec in registry.all_methods():
        fields = {f["name"]: f for f in fields_info(spec.config_cls)}
        for name in spec.cli_flags:
            known = found.get(name)
            # words for other settings ("all": sweep_layers), then for the setting's own values ("auto": -2)
            own = {word: {name: value} for word, value in fields[name]["value_words"].items()}
            words = {**(known.words if known else {}), spec.key: {**spec.cli_words.get(name, {}), **own}}
            methods = (*(known.methods if known else ()), spec.key)
            found[name] = ShortcutFlag(name, fields[name]["label"], fields[name]["type"], methods, words)
    return list(found.values())


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _setting_help(info: dict[str, Any]) -> str:
    text = info["help"]
    if info["accepts_text"]:
        text += f" '{FIXED_DEFAULT}' uses the method's fixed default."
    if info["min"] is not None or info["max"] is not None:
        text += f" Must be {range_text(info)}."
    return text


def add_setting_argument(p: argparse.ArgumentParser, info: dict[str, Any]) -> None:
    """One common setting as a flag (a field-info dict from ``fields_info``)."""
    options: dict[str, Any] = {"dest": info["name"], "help": _setting_help(info)}
    if info["type"] == "bool":
        action = argparse.BooleanOptionalAction if info["default"] else "store_true"
        p.add_argument(_flag(info["flag"]), action=action, default=bool(info["default"]), **options)
        return
    if info["required"]:
        options["required"] = True
    else:
        options["default"] = info["default"]
    if info["choices"]:
        options["choices"] = info["choices"]
    else:
        options["metavar"] = info["flag"].upper()
    if not info["accepts_text"]:  # "auto"/"default" or a number: parsed by validate
        options["type"] = PYTHON_TYPES[info["type"]]
    p.add_argument(_flag(info["flag"]), **options)


def _word_meaning(shortcut: ShortcutFlag, word: str) -> list[str]:
    """The settings a word stands for, by label ("Probe every layer")."""
    meaning = []
    for method, by_word in shortcut.words.items():
        labels = {f["name"]: f["label"] for f in fields_info(registry.get(method).config_cls)}
        meaning += [labels.get(name, name) for name in by_word.get(word, {})]
    return meaning


def add_method_arguments(p: argparse.ArgumentParser, *, method_required: bool = True) -> None:
    """``--method``, every method's shortcut flags and ``--set``."""
    p.add_argument(
        "--method", required=method_required, choices=registry.keys(), help="the adaptation method"
    )
    for shortcut in shortcut_flags():
        words = sorted({w for by_word in shortcut.words.values() for w in by_word})
        extra = "".join(f"; '{w}' for {' + '.join(_word_meaning(shortcut, w))}" for w in words)
        options: dict[str, Any] = {"help": f"{shortcut.label} ({', '.join(shortcut.methods)}){extra}"}
        if not shortcut.has_words:
            options["type"] = PYTHON_TYPES[shortcut.kind]
        p.add_argument(shortcut.flag, dest=shortcut.name, **options)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other method setting, e.g. --set pooling=cls --set placement=parallel",
    )


def add_train_arguments(p: argparse.ArgumentParser, *, method_required: bool = True) -> None:
    """The training flags (shared by ``train``, ``submit`` and ``sweep``): required ones first."""
    settings = fields_info(TrainConfig)
    for info in (s for s in settings if s["required"]):
        add_setting_argument(p, info)
    add_method_arguments(p, method_required=method_required)
    for info in (s for s in settings if not s["required"]):
        add_setting_argument(p, info)
    add_task_arguments(p)


def task_settings() -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Every task setting (a field-info dict) by name, with the tasks that have it."""
    found: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for task in tasks.all_tasks():
        for info in fields_info(task.settings_cls):
            found.setdefault(info["name"], (info, []))[1].append(task.key)
    return found


def add_task_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per task setting; unset (None) unless given, so the task's default applies."""
    for name, (info, keys) in task_settings().items():
        options: dict[str, Any] = {"dest": name, "default": None}
        options["help"] = f"{_setting_help(info)} ({', '.join(keys)}; default {info['default']})"
        if info["choices"]:
            options["choices"] = info["choices"]
        elif info["type"] != "bool":
            options["type"] = PYTHON_TYPES[info["type"]]
        p.add_argument(_flag(info["flag"]), **options)


def task_config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The task settings given as flags; one for a task other than the one named is refused."""
    values: dict[str, Any] = {}
    named = args.task if args.task not in (tasks.AUTO, None, "") else None
    for name, (info, keys) in task_settings().items():
        value = getattr(args, name, None)
        if value is None:
            continue
        if named is not None and named not in keys:
            raise ConfigError(f"{_flag(info['flag'])} applies to the task {' or '.join(keys)}, not {named}")
        values[name] = value
    return values


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _shortcut_values(shortcut: ShortcutFlag, spec: MethodSpec, raw: Any) -> dict[str, Any]:
    """The settings one shortcut flag's value stands for (``--layer all``: a sweep)."""
    if not shortcut.has_words:
        return {shortcut.name: raw}  # argparse has converted it
    words = shortcut.words.get(spec.key, {})
    if raw in words:
        return dict(words[raw])
    try:
        return {shortcut.name: PYTHON_TYPES[shortcut.kind](raw)}
    except ValueError:
        kind = {"int": "an integer", "float": "a number"}.get(shortcut.kind, "text")
        allowed = "".join(f" or '{w}'" for w in words)
        raise ConfigError(f"{shortcut.flag} must be {kind}{allowed}, not '{raw}'") from None


def method_config_from_args(args: argparse.Namespace, method: str | None = None) -> dict[str, Any]:
    """Collect method settings from the shortcut flags and ``--set``; reject misapplied flags.

    With ``method`` (a sweep over several methods) each method takes the flags and ``--set``
    keys that apply to it and leaves the others to the methods they belong to.
    """
    spec = registry.get(method or args.method)
    own = {f["name"] for f in fields_info(spec.config_cls)}
    values: dict[str, Any] = {}
    for shortcut in shortcut_flags():
        raw = getattr(args, shortcut.name)
        if raw is None or (method is not None and spec.key not in shortcut.methods):
            continue
        if spec.key not in shortcut.methods:
            raise ConfigError(
                f"{shortcut.flag} applies to {', '.join(sorted(shortcut.methods))}, not {args.method}"
            )
        values.update(_shortcut_values(shortcut, spec, raw))
    for item in args.set:
        if "=" not in item:
            raise ConfigError(f"--set expects KEY=VALUE, got '{item}'")
        key, _, raw = item.partition("=")
        if method is None or key.strip() in own:
            values[key.strip()] = _parse_value(raw.strip())
    return values


def train_config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The run the flags describe (not yet validated: ``validate`` names any problem)."""
    settings: dict[str, Any] = {}
    for info in fields_info(TrainConfig):
        value = getattr(args, info["name"])
        settings[info["name"]] = None if info["accepts_text"] and value == FIXED_DEFAULT else value
    return TrainConfig(
        method=args.method,
        method_config=method_config_from_args(args),
        task_config=task_config_from_args(args),
        **settings,
    )
