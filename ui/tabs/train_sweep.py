"""The Train tab's sweeps: "Sweep" beside "Launch training" (a grid over one or two settings,
or an Optuna search of N trials) and "Compare methods" (a sweep over methods). Both queue
one sweep with the tab's common settings; the Sweeps tab shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from backend.errors import ConfigError
from ui.endpoints import Endpoints
from ui.feedback import done, problem
from ui.forms import MethodForms
from ui.tabs.train_common import run_settings, split_values

GRID, SEARCH = "Grid", "Search (Optuna)"


@dataclass
class SweepForms:
    kind: gr.Radio
    axis1: gr.Textbox
    axis2: gr.Textbox
    trials: gr.Slider
    search: gr.Textbox
    pruner: gr.Radio
    sweep: gr.Button
    sweep_message: gr.Markdown
    ticked: gr.CheckboxGroup
    compare: gr.Button
    compare_message: gr.Markdown


def build_sweep_forms(methods: list[dict[str, Any]]) -> SweepForms:
    with gr.Accordion("Sweep: try several settings of this method", open=False):
        kind = gr.Radio([GRID, SEARCH], value=GRID, label="Kind", elem_id="sweep-kind")
        with gr.Row():
            axis1 = gr.Textbox(
                label="Grid axis", placeholder="rank=2,4,8,16,32", elem_id="sweep-axis1",
                info="A setting of the method (or lr, epochs, batch_size...) and its values.",
            )  # fmt: skip
            axis2 = gr.Textbox(
                label="Second axis (optional)", placeholder="lr=1e-3,3e-3", elem_id="sweep-axis2"
            )
        with gr.Row():
            trials = gr.Slider(2, 50, value=8, step=1, label="Trials (search)")
            search = gr.Textbox(
                label="Settings to search (search)", placeholder="rank=2:64, lr",
                info="Comma-separated; bounds LOW:HIGH optional. Empty: the method's main setting and lr.",
            )  # fmt: skip
            pruner = gr.Radio(["median", "halving", "none"], value="median", label="Pruner (search)")
        sweep = gr.Button("Sweep", variant="secondary", elem_id="sweep-launch")
        sweep_message = gr.Markdown(elem_id="sweep-message")
    with gr.Accordion("Compare methods", open=True):
        ticked = gr.CheckboxGroup(
            label="Compare methods",
            choices=[m["label"] for m in methods],
            info="One sweep: a run per ticked method on the same data with the common settings above, "
            "each with its own settings (as last set above) and an automatic learning rate.",
        )
        compare = gr.Button("Queue all ticked methods")
        compare_message = gr.Markdown()
    return SweepForms(
        kind, axis1, axis2, trials, search, pruner, sweep, sweep_message, ticked, compare, compare_message
    )


class SweepHandlers:
    def __init__(self, endpoints: Endpoints, forms: MethodForms, task_forms: MethodForms) -> None:
        self.endpoints = endpoints
        self.forms = forms
        self.task_forms = task_forms

    def sweep(
        self,
        dataset_id: int | None,
        eval_id: int | None,
        name: str,
        label: str,
        kind: str,
        axis1: str,
        axis2: str,
        trials: float,
        search: str,
        pruner: str,
        *values: Any,
    ) -> str:
        """Queue a grid or a search of the selected method."""
        try:
            if not dataset_id:
                raise ConfigError("choose the training data first (upload a file on the Data tab)")
            key = self.endpoints.method(label)["key"]
            controls, task_settings = split_values(values, self.forms, self.task_forms)
            own = self.forms.method_config(key, controls)
            common = {
                "eval_dataset_id": eval_id or None,
                "name": name,
                "task_settings": task_settings,
                **run_settings(values),
            }
            if kind == GRID:
                axes = [a.strip() for a in (axis1, axis2) if a and a.strip()]
                if not axes:
                    raise ConfigError("give a grid axis, e.g. rank=2,8,32")
                result = self.endpoints.launch_sweep(
                    dataset_id, key, grid=axes, method_settings={key: own}, **common
                )
            else:
                names = [s.strip() for s in (search or "").split(",") if s.strip()]
                result = self.endpoints.launch_sweep(
                    dataset_id,
                    key,
                    trials=int(trials),
                    search=names,
                    pruner=pruner,
                    method_settings={key: own},
                    **common,
                )
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "queueing the sweep")
        return done(f"Queued sweep **#{result['sweep_id']}**. Follow it on the Sweeps tab.")

    def compare(self, dataset_id: int | None, eval_id: int | None, labels: list[str], *values: Any) -> str:
        """One sweep over the ticked methods."""
        try:
            if not dataset_id:
                raise ConfigError("choose the training data first (upload a file on the Data tab)")
            if not labels:
                raise ConfigError("tick at least one method to compare")
            keys = [self.endpoints.method(label)["key"] for label in labels]
            controls, task_settings = split_values(values, self.forms, self.task_forms)
            configs = self.forms.all_configs(controls)
            result = self.endpoints.launch_sweep(
                dataset_id,
                methods=keys,
                method_settings={k: configs[k] for k in keys},
                eval_dataset_id=eval_id or None,
                task_settings=task_settings,
                **run_settings(values),
            )
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "queueing the comparison")
        return done(
            f"Queued sweep **#{result['sweep_id']}**: one run each of {', '.join(labels)}. "
            "Follow it on the Sweeps tab; compare the runs on the Compare tab."
        )


def wire_sweeps(f: SweepForms, h: SweepHandlers, run_inputs: list[Any], settings: list[Any]) -> None:
    """``run_inputs``: dataset, eval dataset, name, method; ``settings``: common, then controls."""
    private: dict[str, Any] = {"api_visibility": "private"}
    form = [f.kind, f.axis1, f.axis2, f.trials, f.search, f.pruner]
    f.sweep.click(h.sweep, [*run_inputs, *form, *settings], [f.sweep_message], **private)
    dataset, eval_dataset = run_inputs[:2]
    f.compare.click(h.compare, [dataset, eval_dataset, f.ticked, *settings], [f.compare_message], **private)
