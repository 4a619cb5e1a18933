""" "Use these settings": a finished run's settings put back into the Train tab's controls.

The Sweeps tab names a job; this fills the method, the common settings and the method's own
controls from that job's stored config, so a person can launch it again or change one thing.
Values the run left on "auto" stay on auto (the search re-runs on the new launch); values it
fixed are typed in with "auto" unticked.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.endpoints import Endpoints
from ui.forms import MethodForms
from ui.tabs.data import dataset_choices

HOLD_OUT = ("Hold out 10% of the training data", 0)


def auto_pair(value: Any) -> tuple[bool, Any]:
    """(auto box, typed field) for a stored "auto" or number."""
    return (True, gr.skip()) if value in (None, "auto") else (False, value)


def filled_values(
    endpoints: Endpoints, forms: MethodForms, task_forms: MethodForms, job_id: int
) -> tuple[dict[str, Any], list[Any]]:
    """(what ``method_changed`` must keep, values for [dataset, eval dataset, method, *common,
    *method controls, *task controls])."""
    job = endpoints.api.get_job(int(job_id), log_tail=0)
    config = job["config"]
    method = endpoints.method(config["method"])
    epochs_auto, epochs = auto_pair(config.get("epochs"))
    lr_auto, lr = auto_pair(config.get("lr"))
    common = [
        config.get("model") or gr.skip(),
        epochs_auto,
        epochs,
        lr_auto,
        lr,
        config.get("batch_size", gr.skip()),
        config.get("max_length", gr.skip()),
        config.get("quant", gr.skip()),
        config.get("precision", gr.skip()),
        config.get("group_by_length", gr.skip()),
        config.get("gradient_checkpointing", gr.skip()),
        config.get("task", gr.skip()),
    ]
    own = config.get("method_config") or {}
    controls = [
        own[c.name] if c.method == method["key"] and c.name in own else gr.skip() for c in forms.controls
    ]
    # the run's task settings go to its task's controls (its task: what "auto" found, stored)
    task_own = config.get("task_config") or {}
    task_controls = [
        task_own[c.name] if c.method == config.get("task") and c.name in task_own else gr.skip()
        for c in task_forms.controls
    ]
    # Picking the method resets epochs and lr to its defaults; this tells that handler not to.
    keep = {"method": method["key"], "epochs": None if epochs_auto else epochs, "lr": None if lr_auto else lr}
    choices = dataset_choices(endpoints)
    known = {c[1] for c in choices}
    datasets = [
        gr.update(choices=choices, value=job["dataset_id"]) if job["dataset_id"] in known else gr.skip(),
        gr.update(
            choices=[HOLD_OUT, *choices],
            value=job["eval_dataset_id"] if job["eval_dataset_id"] in known else 0,
        ),
    ]
    return keep, [*datasets, method["label"], *common, *controls, *task_controls]
