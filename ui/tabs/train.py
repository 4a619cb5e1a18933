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
    split_values,
)
from ui.tabs.train_facts import wire_model_facts
from ui.tabs.train_reuse import HOLD_OUT, filled_values
from ui.tabs.train_sweep import SweepHandlers, build_sweep_forms, wire_sweeps


@dataclass
class TrainTab:
    """What other tabs need: the id of the job this browser queued last, and where to put a
    job id whose settings the form should take ("use these settings")."""

    launched: gr.State
    use: gr.State


class _Handlers:
    """Event handlers; each returns values for its outputs and shows problems inline."""

    def __init__(self, endpoints: Endpoints, forms: MethodForms, task_forms: MethodForms) -> None:
        self.endpoints = endpoints
        self.forms = forms
        self.task_forms = task_forms

    def method_changed(self, label: str, keep: dict[str, Any] | None) -> list[Any]:
        """Show the method's controls, description and defaults (``keep``: the epochs and lr
        a "use these settings" fill just set for this method, left as they are)."""
        m = self.endpoints.method(label)
        text = f"*{m['description']}* (library: {m['library']})"
        if keep and keep["method"] == m["key"]:
            # ``keep`` stays until another method is picked: the change can fire a second time
            # for the same method, and a consumed ``keep`` then reset the filled rate to the
            # method's default (a clean-clone run of the browser test: 0.002 for 0.003).
            kept = [gr.skip() if keep[k] is None else keep[k] for k in ("epochs", "lr")]
            return [*self.forms.visibility(m["key"]), text, *kept, gr.skip()]
        return [*self.forms.visibility(m["key"]), text, m["default_epochs"], m["default_lr"], None]

    def refusal(self, label: str, task: str | None, dataset_id: int | None) -> str:
        """Why the chosen method cannot train the chosen task (for "auto": the dataset's), where
        it cannot (``refused_tasks``): said before launch, which it would refuse; "" otherwise."""
        m = self.endpoints.method(label)
        if not m["refused_tasks"]:
            return ""
        key = task
        if key in (None, "", "auto") and dataset_id:
            try:
                key = self.endpoints.api.dataset_task(int(dataset_id))
            except Exception:  # noqa: BLE001 - the dataset went meanwhile: nothing to say yet
                return ""
        why = m["refused_tasks"].get(key or "")
        return f"⚠ {why}: launching it would be refused; choose another method." if why else ""

    def use_run(self, job_id: int | None, label: str) -> list[Any]:
        """Every control set from job ``job_id``'s settings; the request is then cleared."""
        # use, origin, keep, dataset, eval dataset, method, the settings, the message
        outputs = 7 + COMMON_SETTINGS + len(self.forms.controls) + len(self.task_forms.controls)
        if job_id is None:
            return [gr.skip()] * outputs
        try:
            keep, values = filled_values(self.endpoints, self.forms, self.task_forms, int(job_id))
        except Exception as exc:  # noqa: BLE001 - e.g. the run was deleted meanwhile
            return [gr.skip()] * (outputs - 1) + [problem(exc, "reading the run's settings")]
        if values[2] == label:
            keep = None  # the method stays: its change handler will not run to take ``keep``
        note = done(f"Settings of run **#{job_id}** filled in: launch it again or change what you like.")
        return [None, int(job_id), keep, *values, note]

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
        self,
        origin: int | None,
        dataset_id: int | None,
        eval_id: int | None,
        name: str,
        label: str,
        *values: Any,
    ) -> tuple[str, Any]:
        """Queue one job with the form's settings (``values``: common settings, then controls);
        ``origin``: the run whose settings were filled in, recorded as the job's lineage."""
        try:
            key = self.endpoints.method(label)["key"]
            job = self._queue(dataset_id, eval_id, key, values, name=name, rerun_of=origin)
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "queueing the job"), gr.skip()
        return done(f"Queued job **#{job['id']}** ({job['name']}). Follow it on the Runs tab."), job["id"]

    def plan(self, dataset_id: int | None, eval_id: int | None, label: str, *values: Any) -> str:
        """The epochs, steps and learning rate a launch would use, and the forecast of its time
        and peak memory (with the setting to change when it may not fit), before launch."""
        if not dataset_id:
            return "*Choose the training data to see how long the run will train.*"
        try:
            key = self.endpoints.method(label)["key"]
            _, epochs_auto, epochs, lr_auto, lr, batch = values[:6]
            config = self.forms.method_config(key, values[COMMON_SETTINGS:])
            settings = {
                "epochs": epochs_value(epochs_auto, epochs),
                "lr": lr_value(lr_auto, lr),
                "batch_size": int(batch),
            }
            plan = self.endpoints.api.plan_run(
                int(dataset_id), key, config, has_eval_file=bool(eval_id), **settings
            )
        except Exception as exc:  # noqa: BLE001 - e.g. a dataset deleted in another browser
            return problem(exc, "planning the run", toast=False)
        try:
            run = run_settings(values)
            keys = ("model", "max_length", "quant", "precision", "group_by_length", "gradient_checkpointing")
            extra = {k: run[k] for k in keys}
            forecast = self.endpoints.api.forecast(
                int(dataset_id), key, config, eval_dataset_id=eval_id or None, **settings, **extra
            )
        except Exception as exc:  # noqa: BLE001 - the plan stands without a forecast
            return f"{plan['text']}\n\n{problem(exc, 'forecasting the run', toast=False)}"
        return f"{plan['text']}\n\n{forecast['text']}"

    def _queue(
        self,
        dataset_id: int | None,
        eval_id: int | None,
        key: str,
        values: tuple[Any, ...],
        *,
        name: str = "",
        rerun_of: int | None = None,
    ) -> dict[str, Any]:
        if not dataset_id:
            raise ConfigError("choose the training data first (upload a file on the Data tab)")
        own, task_settings = split_values(values, self.forms, self.task_forms)
        return self.endpoints.launch(
            dataset_id,
            key,
            self.forms.method_config(key, own),
            eval_dataset_id=eval_id or None,
            name=name,
            rerun_of=rerun_of,
            task_settings=task_settings,
            **run_settings(values),
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
    """Lay out the Train tab and wire its events (call inside its ``ui.nav`` page)."""
    methods = endpoints.methods
    first = next((m for m in methods if m["default"]), methods[0])
    with gr.Row():
        dataset = gr.Dropdown(label="Training data", choices=[], interactive=True)
        eval_dataset = gr.Dropdown(label="Evaluation data", choices=[HOLD_OUT], value=0, interactive=True)
        name = gr.Textbox(label="Run name (optional)", placeholder="e.g. lora-r16-sst2")
    method = gr.Radio(label="Method", choices=[m["label"] for m in methods], value=first["label"])
    description = gr.Markdown(f"*{first['description']}* (library: {first['library']})")
    refusal = gr.Markdown(elem_id="method-refusal")
    forms = build_method_forms(methods, first["key"])
    params = gr.Markdown(elem_id="trainable-params")
    common = common_settings(endpoints, first)
    plan = gr.Markdown(elem_id="run-plan")
    launch = gr.Button("Launch training", variant="primary")
    launch_message = gr.Markdown(elem_id="launch-message")
    sweep_form = build_sweep_forms(methods)

    h, launched = _Handlers(endpoints, forms, common.task_forms), gr.State(None)
    # use: a job id whose settings to take; origin: the last such job (the launch's lineage);
    # keep: the epochs and lr just filled, which picking the method must not reset
    use, origin, keep = gr.State(None), gr.State(None), gr.State(None)
    quiet: dict[str, Any] = {"api_visibility": "private", "show_progress": "hidden"}
    count_inputs = [common.model, method, dataset, *forms.components]
    shown = [*forms.groups.values(), description, common.epochs, common.lr, keep]
    method.change(h.method_changed, [method, keep], shown, **quiet).then(
        h.parameters, count_inputs, [params], **quiet
    )
    wire_changes(forms, h.parameters, count_inputs, [params])
    for trigger in (method.change, common.task.change, dataset.change):  # the method meets the task
        trigger(h.refusal, [method, common.task, dataset], [refusal], **quiet)
    for trigger in (common.model.change, dataset.change, demo.load):
        trigger(h.parameters, count_inputs, [params], **quiet)
    wire_model_facts(endpoints, demo, forms, common, method, dataset)
    # Ticking "auto" locks the typed value; the plan line follows every setting it depends on.
    for box, field in ((common.epochs_auto, common.epochs), (common.lr_auto, common.lr)):
        box.change(lambda auto: gr.update(interactive=not auto), [box], [field], **quiet)
    plan_inputs = [dataset, eval_dataset, method, *common.components(), *forms.components]
    plan_triggers = [dataset, eval_dataset, method, common.epochs_auto, common.epochs, common.lr_auto]
    forecast_triggers = [
        common.model,
        common.max_length,
        common.quant,
        common.precision,
        common.group_by_length,
        common.gradient_checkpointing,
    ]
    # One listener, its latest inputs winning: filling the form changes many settings at once,
    # and a listener per setting let an earlier plan land last.
    plan_changes = (*plan_triggers, common.lr, common.batch_size, *forecast_triggers, *forms.components)
    gr.on([c.change for c in plan_changes], h.plan, plan_inputs, [plan], trigger_mode="always_last", **quiet)
    demo.load(h.plan, plan_inputs, [plan], **quiet)
    private: dict[str, Any] = {"api_visibility": "private"}
    settings = [*common.components(), *forms.components, *common.task_forms.components]
    launch.click(
        h.launch,
        [origin, dataset, eval_dataset, name, method, *settings],
        [launch_message, launched],
        **private,
    )
    sweeps = SweepHandlers(endpoints, forms, common.task_forms)
    wire_sweeps(sweep_form, sweeps, [dataset, eval_dataset, name, method], settings)
    filled = [use, origin, keep, dataset, eval_dataset, method, *settings, launch_message]
    use.change(h.use_run, [use, method], filled, **quiet)
    for state in (selected, eval_selected):
        state.change(h.datasets, [selected, eval_selected], [dataset, eval_dataset], **private)
    return TrainTab(launched=launched, use=use)
