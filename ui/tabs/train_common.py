"""The Train tab's common settings (model, epochs, learning rate, batch, length, quantization,
precision, length grouping, gradient checkpointing): their controls, made from the settings'
metadata, and their values as the keyword arguments of ``/launch`` and ``/launch_sweep``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui.endpoints import Endpoints
from ui.forms import MethodForms, build_task_forms, control_for


@dataclass
class Common:
    """The settings every method shares (components, in handler argument order)."""

    model: gr.Dropdown
    epochs_auto: gr.Checkbox
    epochs: gr.Slider
    lr_auto: gr.Checkbox
    lr: gr.Number
    batch_size: gr.Slider
    max_length: gr.Slider
    quant: gr.Radio
    precision: gr.Radio
    group_by_length: gr.Checkbox
    gradient_checkpointing: gr.Radio
    task: gr.Radio  # what the model outputs: auto (from the label column) or a task named
    facts: gr.Markdown  # the chosen model's size, kind and memory (ui.tabs.train_facts); no setting
    # the tasks' own settings (the tag scheme...): their controls come after the method's
    task_forms: MethodForms

    def components(self) -> list[Any]:
        return [
            self.model,
            self.epochs_auto,
            self.epochs,
            self.lr_auto,
            self.lr,
            self.batch_size,
            self.max_length,
            self.quant,
            self.precision,
            self.group_by_length,
            self.gradient_checkpointing,
            self.task,
        ]


COMMON_SETTINGS = 12  # len(Common.components()): handlers get these values before the method's


def epochs_value(auto: bool, epochs: float | None) -> int | str:
    """ "auto" while the box is ticked, else the slider's whole number (a typed value wins)."""
    return "auto" if auto or not epochs else int(epochs)


def lr_value(auto: bool, lr: float | None) -> float | str:
    return "auto" if auto or not lr else float(lr)


def split_values(
    values: tuple[Any, ...] | list[Any], forms: MethodForms, task_forms: MethodForms
) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """A handler's ``values`` (common settings, the method controls, the task controls) as the
    method controls' values and the tasks' settings by task key (``/launch``'s task_settings)."""
    end = COMMON_SETTINGS + len(forms.controls)
    return list(values[COMMON_SETTINGS:end]), task_forms.all_configs(values[end:])


def run_settings(values: tuple[Any, ...] | list[Any]) -> dict[str, Any]:
    """The common settings' values (the first ``COMMON_SETTINGS`` of a handler's inputs) as
    the keyword arguments of ``/launch`` and ``/launch_sweep``."""
    (
        model,
        epochs_auto,
        epochs,
        lr_auto,
        lr,
        batch,
        max_length,
        quant,
        precision,
        grouped,
        checkpointing,
        task,
    ) = values[:COMMON_SETTINGS]
    return {
        "model": model,
        "epochs": epochs_value(epochs_auto, epochs),
        "lr": lr_value(lr_auto, lr),
        "batch_size": int(batch),
        "max_length": int(max_length),
        "quant": quant,
        "precision": precision,
        "group_by_length": bool(grouped),
        "gradient_checkpointing": checkpointing,
        "task": task,
    }


def common_settings(endpoints: Endpoints, method: dict[str, Any]) -> Common:
    device = endpoints.api.device_info()
    models = endpoints.api.list_models()
    setting = {s["name"]: s for s in endpoints.api.list_settings()}
    with gr.Row():
        model = gr.Dropdown(
            label=setting["model"]["label"],
            choices=models,
            value=models[0],
            allow_custom_value=True,
            info=setting["model"]["help"],
        )
        quant = control_for(
            setting["quant"],
            info=f"Detected device: {device['name']}; precision auto: {device['precision']}. "
            f"{setting['quant']['help']}",
        )
    facts = gr.Markdown(elem_id="model-facts")  # under the picker; filled on load and on change
    with gr.Row():
        with gr.Column(min_width=160):
            epochs_auto = gr.Checkbox(
                value=True,
                label=f"{setting['epochs']['label']}: auto",
                info="Enough optimizer steps for this data (300 or more), early stopping, best epoch kept.",
            )
            epochs = control_for(
                setting["epochs"], value=method["default_epochs"], info=None, interactive=False
            )
        with gr.Column(min_width=160):
            lr_auto = gr.Checkbox(
                value=True,
                label=f"{setting['lr']['label']}: auto",
                info="A short search on your training data picks it (never on the evaluation set).",
            )
            lr = control_for(
                setting["lr"],
                value=method["default_lr"],
                info="Untick auto to type one; set to the method's default when you pick a method.",
                interactive=False,
            )
        batch = control_for(setting["batch_size"], info=None)
        max_length = control_for(setting["max_length"])
    with gr.Row():
        here = f"Here 'auto' means {device['precision']}."
        precision = control_for(setting["precision"], info=f"{here} {setting['precision']['help']}")
        grouped = control_for(setting["group_by_length"])
        checkpointing = control_for(setting["gradient_checkpointing"])
    task = control_for(setting["task"], elem_id="train-task")
    task_forms = build_task_forms(endpoints.tasks, auto=setting["task"]["default"])
    if task_forms.groups:
        task.change(
            task_forms.visibility, [task], list(task_forms.groups.values()),
            api_visibility="private", show_progress="hidden",
        )  # fmt: skip
    return Common(
        model, epochs_auto, epochs, lr_auto, lr, batch, max_length, quant, precision, grouped, checkpointing,
        task, facts, task_forms,
    )  # fmt: skip
