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
from ui.forms import MethodForms, build_method_forms, control_for, wire_changes
from ui.tabs.data import dataset_choices

HOLD_OUT = ("Hold out 10% of the training data", 0)


@dataclass
class TrainTab:
    """What other tabs need: the id of the job this browser queued last."""

    launched: gr.State


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
        ]


COMMON_SETTINGS = 10  # len(Common.components()): handlers get these values before the method's


def epochs_value(auto: bool, epochs: float | None) -> int | str:
    """ "auto" while the box is ticked, else the slider's whole number (a typed value wins)."""
    return "auto" if auto or not epochs else int(epochs)


def lr_value(auto: bool, lr: float | None) -> float | str:
    return "auto" if auto or not lr else float(lr)


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

    def launch_many(
        self, dataset_id: int | None, eval_id: int | None, labels: list[str], *values: Any
    ) -> tuple[str, Any]:
        """Queue one job per ticked method: same data and common settings, each method's own
        settings and an automatic learning rate (one lr does not fit methods 1000x apart)."""
        queued: list[str] = []
        try:
            if not labels:
                raise ConfigError("tick at least one method to compare")
            for label in labels:
                job = self._queue(
                    dataset_id, eval_id, self.endpoints.method(label)["key"], values, auto_lr=True
                )
                queued.append(f"#{job['id']} {label}")
        except Exception as exc:  # noqa: BLE001
            prefix = f"Queued {', '.join(queued)}; then: " if queued else ""
            return prefix + problem(exc, "queueing the jobs"), gr.skip()
        return done(f"Queued {len(queued)} jobs: {', '.join(queued)}."), gr.skip()

    def _queue(
        self,
        dataset_id: int | None,
        eval_id: int | None,
        key: str,
        values: tuple[Any, ...],
        *,
        name: str = "",
        auto_lr: bool = False,
    ) -> dict[str, Any]:
        if not dataset_id:
            raise ConfigError("choose the training data first (upload a file on the Data tab)")
        model, epochs_auto, epochs, lr_auto, lr, batch, max_length, quant, precision, grouped = values[
            :COMMON_SETTINGS
        ]
        config = self.forms.method_config(key, values[COMMON_SETTINGS:])
        return self.endpoints.launch(
            dataset_id,
            key,
            config,
            model,
            epochs_value(epochs_auto, epochs),
            "auto" if auto_lr else lr_value(lr_auto, lr),
            int(batch),
            int(max_length),
            quant,
            eval_id or None,
            name,
            precision,
            bool(grouped),
        )

    def datasets(self, selected: int | None, eval_selected: int | None) -> tuple[Any, Any]:
        """The data pickers after the Data tab changed its selection."""
        choices = dataset_choices(self.endpoints)
        return (
            gr.update(choices=choices, value=selected),
            gr.update(choices=[HOLD_OUT, *choices], value=eval_selected or 0),
        )


def _common_settings(endpoints: Endpoints, method: dict[str, Any]) -> Common:
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
    return Common(model, epochs_auto, epochs, lr_auto, lr, batch, max_length, quant, precision, grouped)


def _compare_methods(methods: list[dict[str, Any]]) -> tuple[gr.CheckboxGroup, gr.Button, gr.Markdown]:
    with gr.Accordion("Compare methods", open=True):
        ticked = gr.CheckboxGroup(
            label="Compare methods",
            choices=[m["label"] for m in methods],
            info="Queue one run per ticked method on the same data with the common settings above, "
            "each with its own settings (as last set above) and an automatic learning rate.",
        )
        return ticked, gr.Button("Queue all ticked methods"), gr.Markdown()


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
    common = _common_settings(endpoints, first)
    plan = gr.Markdown(elem_id="run-plan")
    launch = gr.Button("Launch training", variant="primary")
    launch_message = gr.Markdown(elem_id="launch-message")
    ticked, launch_all, compare_message = _compare_methods(methods)

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
    launch_all.click(
        h.launch_many, [dataset, eval_dataset, ticked, *settings], [compare_message, launched], **private
    )
    for state in (selected, eval_selected):
        state.change(h.datasets, [selected, eval_selected], [dataset, eval_dataset], **private)
    return TrainTab(launched=launched)
