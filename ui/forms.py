"""Settings forms, generated from the settings' metadata, and back again.

``Workbench.list_methods()`` describes every setting of every method (type, label,
help, range, step, choices); ``Workbench.list_settings()`` the common ones (epochs,
batch size...) the same way. This module turns such a description into a Gradio
control, builds one group of controls per method, and turns the controls' values back
into a ``method_config`` dict. It knows no method or setting by name: a new method
with new settings needs no UI change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
from gradio.components import Component

MAX_RADIO_CHOICES = 4  # more choices than this read better as a dropdown


@dataclass(frozen=True)
class Control:
    """One generated control: which method and setting it edits, and its component."""

    method: str
    name: str
    kind: str  # "int" | "float" | "bool" | "str"
    component: Component


@dataclass
class MethodForms:
    """Every method's controls (built once; groups are shown for the selected method)."""

    methods: list[dict[str, Any]]
    groups: dict[str, gr.Group] = field(default_factory=dict)
    controls: list[Control] = field(default_factory=list)
    auto: str | None = None  # task forms: the choice that shows every group (see build_task_forms)

    @property
    def components(self) -> list[Component]:
        """All controls in a fixed order: what event handlers receive as ``*values``."""
        return [c.component for c in self.controls]

    def method_config(self, method: str, values: Sequence[Any]) -> dict[str, Any]:
        """The ``method_config`` of ``method`` from the values of :attr:`components`."""
        return {
            c.name: coerce(c.kind, value)
            for c, value in zip(self.controls, values, strict=True)
            if c.method == method
        }

    def all_configs(self, values: Sequence[Any]) -> dict[str, dict[str, Any]]:
        """Every method's ``method_config`` at once (for queueing several methods)."""
        return {m["key"]: self.method_config(m["key"], values) for m in self.methods}

    def visibility(self, method: str) -> list[Any]:
        """Updates for :attr:`groups` (in their order) that show only ``method``'s group (every
        group for the ``auto`` choice of task forms)."""
        return [gr.update(visible=shown(key == method or method == self.auto)) for key in self.groups]


def shown(visible: bool) -> bool | str:
    """``True`` or ``"hidden"``, never ``False``.

    Gradio unmounts a ``visible=False`` group; its sliders then come back without
    their track drawn. "hidden" keeps them mounted and out of sight (and out of the
    accessibility tree, so a label shared by several methods finds the visible one).
    """
    return True if visible else "hidden"


def coerce(kind: str, value: Any) -> Any:
    """A control's value as the setting's type (sliders send floats, textboxes None)."""
    if kind == "int":
        return round(float(value))
    if kind == "float":
        return float(value)
    if kind == "bool":
        return bool(value)
    return "" if value is None else str(value)


def control_for(spec: dict[str, Any], **overrides: Any) -> Component:
    """The Gradio control for one field description from ``list_methods()`` or
    ``list_settings()``; ``overrides`` replace its arguments (e.g. ``value``, ``info``)."""
    kind, default = spec["type"], spec["default"]
    choices = spec.get("choices")
    args: dict[str, Any] = {"label": spec["label"], "info": spec.get("help") or None, "value": default}
    if choices:
        shown_as = spec.get("choice_labels") or choices
        widget: Any = gr.Radio if len(choices) <= MAX_RADIO_CHOICES else gr.Dropdown
        args["choices"] = list(zip(shown_as, choices, strict=True))
    elif kind == "bool":
        widget, args["value"] = gr.Checkbox, bool(default)
    elif (
        kind == "int"
        and spec.get("value_words")
        and spec.get("min") is not None
        and spec.get("max") is not None
    ):
        # A number some of whose values stand for a behaviour ("auto"): a slider would show -2;
        # a dropdown shows each such value as its word, and the others as numbers.
        named = {value: word for word, value in spec["value_words"].items()}
        widget = gr.Dropdown
        args["choices"] = [(named.get(v, str(v)), v) for v in range(spec["min"], spec["max"] + 1)]
    elif kind in ("int", "float") and spec.get("min") is not None and spec.get("max") is not None:
        step = spec.get("step") or (1 if kind == "int" else (spec["max"] - spec["min"]) / 100)
        widget = gr.Slider
        args.update(minimum=spec["min"], maximum=spec["max"], step=step)
    elif kind in ("int", "float"):
        widget, args["precision"] = gr.Number, 0 if kind == "int" else None
    else:
        widget, args["value"] = gr.Textbox, default or ""
    return widget(**{**args, **overrides})


def build_method_forms(methods: list[dict[str, Any]], selected: str) -> MethodForms:
    """Render one group of controls per method; only ``selected``'s group is visible."""
    forms = MethodForms(methods=methods)
    for method in methods:
        with gr.Group(visible=shown(method["key"] == selected)) as group:
            if not method["fields"]:
                gr.Markdown(
                    f"{method['label']} has no settings of its own: it uses the common ones below.",
                    padding=True,
                )
            with gr.Row(equal_height=True):
                for spec in method["fields"]:
                    forms.controls.append(
                        Control(method["key"], spec["name"], spec["type"], control_for(spec))
                    )
        forms.groups[method["key"]] = group
    return forms


def build_task_forms(tasks: list[dict[str, Any]], auto: str) -> MethodForms:
    """One group of controls per task that has settings of its own, each shown while the Task
    choice is that task or ``auto`` (the run then takes the settings of the task its data is)."""
    forms = MethodForms(methods=[t for t in tasks if t["fields"]])
    for task in forms.methods:
        with gr.Group() as group:
            gr.Markdown(f"**{task['label']}**: used when the run is {task['label'].lower()}.", padding=True)
            with gr.Row(equal_height=True):
                for spec in task["fields"]:
                    forms.controls.append(Control(task["key"], spec["name"], spec["type"], control_for(spec)))
        forms.groups[task["key"]] = group
    forms.auto = auto
    return forms


def wire_changes(forms: MethodForms, handler: Any, inputs: list[Component], outputs: list[Component]) -> None:
    """Call ``handler`` whenever any control changes.

    ``change`` covers typing, dragging (coalesced by ``always_last``) and the release
    of a slider, so no separate ``release`` listener is needed.
    """
    for control in forms.components:
        control.change(
            handler,
            inputs,
            outputs,
            api_visibility="private",
            trigger_mode="always_last",
            show_progress="hidden",
        )
