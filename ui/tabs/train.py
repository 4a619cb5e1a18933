"""Train tab: base model, method and its generated controls, common settings, launch.

Every control's label, range and help come from the settings' metadata (``list_methods``
and ``list_settings``); this tab only lays them out and adds the "auto" switches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from backend.errors import ConfigError
from ui.endpoints import Endpoints
from ui.feedback import done, problem
from ui.forms import MethodForms, build_method_forms, wire_changes
from ui.tabs.data import dataset_choices
from ui.tabs.train_common import (
    COMMON_SETTINGS,
    common_settings,
    epochs_value,
    lr_value,
    run_settings,
)
from ui.tabs.train_sweep import SweepHandlers, build_sweep_forms, wire_sweeps

HOLD_OUT = ("Hold out 10% of the training data", 0)


@dataclass
class TrainTab:
    """What other tabs need: the id of the job this browser queued last."""

    launched: gr.State


class _Handlers:
    """Event handlers; each returns values for its outputs and shows problems inline."""

    def __init__(self, endpoints: Endpoints, forms: MethodForms) -> None:
        self.endpoints = endpoints
        self.forms = forms

    def method_changed(self, label: str) -> list[Any]:
        """Show the method's controls, description and defaults."""
        m = self.endpoints.method(label)
        text = f"*{m['description']}* (library: {m['library']})"
        return [*self.forms.visibility(m["key"]), text, m["default_epochs"], m["default_lr"]]

    def parameters(self, model: str, label: str, dataset_id: int | None, *values: Any) -> str:
        """The live "Trainable parameters: N (x.xx% of M)" line."""
        try:
            m = self.endpoints.method(label)
            labels = self.endpoints.dataset(dataset_id)["label_counts"] if dataset_id else {}
            counted = self.endpoints.api.count_parameters(
                model or None,
                m["key"],
                self.forms.method_config(m["key"], values),
                num_labels=max(2, len(labels)),
            )
        except Exception as exc:  # noqa: BLE001 - e.g. a layer the model does not have
            return problem(exc, "counting parameters", toast=False)
        return f"**{counted['text']}**"

    def launch(
        self, dataset_id: int | None, eval_id: int | None, name: str, label: str, *values: Any
    ) -> tuple[str, Any]:
        """Queue one job with the form's settings (``values``: common settings, then controls)."""
        try:
            key = self.endpoints.method(label)["key"]
            job = self._queue(dataset_id, eval_id, key, values, name=name)
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "queueing the job"), gr.skip()
        return done(f"Queued job **#{job['id']}** ({job['name']}). Follow it on the Runs tab."), job["id"]

    def plan(self, dataset_id: int | None, eval_id: int | None, label: str, *values: Any) -> str:
        """The epochs, steps and learning rate a launch would use, shown before launch."""
        if not dataset_id:
            return "*Choose the training data to see how long the run will train.*"
        try:
            key = self.endpoints.method(label)["key"]
            _, epochs_auto, epochs, lr_auto, lr, batch = values[:6]
            plan = self.endpoints.api.plan_run(
                int(dataset_id),
                key,
                self.forms.method_config(key, values[COMMON_SETTINGS:]),
                has_eval_file=bool(eval_id),
                epochs=epochs_value(epochs_auto, epochs),
                lr=lr_value(lr_auto, lr),
                batch_size=int(batch),
            )
        except Exception as exc:  # noqa: BLE001 - e.g. a dataset deleted in another browser
            return problem(exc, "planning the run", toast=False)
        return plan["text"]

    def _queue(
        self,
        dataset_id: int | None,
        eval_id: int | None,
        key: str,
        values: tuple[Any, ...],
        *,
        name: str = "",
    ) -> dict[str, Any]:
        if not dataset_id:
            raise ConfigError("choose the training data first (upload a file on the Data tab)")
        config = self.forms.method_config(key, values[COMMON_SETTINGS:])
        return self.endpoints.launch(
            dataset_id, key, config, eval_dataset_id=eval_id or None, name=name, **run_settings(values)
        )

    def datasets(self, selected: int | None, eval_selected: int | None) -> tuple[Any, Any]:
        """The data pickers after the Data tab changed its selection."""
        choices = dataset_choices(self.endpoints)
        return (
            gr.update(choices=choices, value=selected),
            gr.update(choices=[HOLD_OUT, *choices], value=eval_selected or 0),
        )


def build_train_tab(
    endpoints: Endpoints, demo: gr.Blocks, selected: gr.State, eval_selected: gr.State
) -> TrainTab:
    """Lay out the Train tab and wire its events (call inside a ``gr.Tab``)."""
    methods = endpoints.methods
    first = next((m for m in methods if m["default"]), methods[0])
    with gr.Row():
        dataset = gr.Dropdown(label="Training data", choices=[], interactive=True)
        eval_dataset = gr.Dropdown(label="Evaluation data", choices=[HOLD_OUT], value=0, interactive=True)
        name = gr.Textbox(label="Run name (optional)", placeholder="e.g. lora-r16-sst2")
    method = gr.Radio(label="Method", choices=[m["label"] for m in methods], value=first["label"])
    description = gr.Markdown(f"*{first['description']}* (library: {first['library']})")
    forms = build_method_forms(methods, first["key"])
    params = gr.Markdown(elem_id="trainable-params")
    common = common_settings(endpoints, first)
    plan = gr.Markdown(elem_id="run-plan")
    launch = gr.Button("Launch training", variant="primary")
    launch_message = gr.Markdown(elem_id="launch-message")
    sweep_form = build_sweep_forms(methods)

    h, launched = _Handlers(endpoints, forms), gr.State(None)
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    count_inputs = [common.model, method, dataset, *forms.components]
    shown = [*forms.groups.values(), description, common.epochs, common.lr]
    method.change(h.method_changed, [method], shown, **quiet).then(
        h.parameters, count_inputs, [params], **quiet
    )
    wire_changes(forms, h.parameters, count_inputs, [params])
    for trigger in (common.model.change, dataset.change, demo.load):
        trigger(h.parameters, count_inputs, [params], **quiet)
    # Ticking "auto" locks the typed value; the plan line follows every setting it depends on.
    for box, field in ((common.epochs_auto, common.epochs), (common.lr_auto, common.lr)):
        box.change(lambda auto: gr.update(interactive=not auto), [box], [field], **quiet)
    plan_inputs = [dataset, eval_dataset, method, *common.components(), *forms.components]
    plan_triggers = [dataset, eval_dataset, method, common.epochs_auto, common.epochs, common.lr_auto]
    for component in (*plan_triggers, common.lr, common.batch_size, *forms.components):
        component.change(h.plan, plan_inputs, [plan], **quiet)
    demo.load(h.plan, plan_inputs, [plan], **quiet)
    private: dict[str, Any] = {"api_visibility": "private"}
    settings = [*common.components(), *forms.components]
    launch.click(
        h.launch, [dataset, eval_dataset, name, method, *settings], [launch_message, launched], **private
    )
    wire_sweeps(sweep_form, SweepHandlers(endpoints, forms), [dataset, eval_dataset, name, method], settings)
    for state in (selected, eval_selected):
        state.change(h.datasets, [selected, eval_selected], [dataset, eval_dataset], **private)
    return TrainTab(launched=launched)
