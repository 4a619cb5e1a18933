"""Probing by layer: a probing run's accuracy at every layer, the best layer marked, and beside
it the layer curve of another task's sweep on the same base model (BERTology: part of speech
sits low, entities and sentence meaning higher up)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui import charts
from ui.endpoints import Endpoints
from ui.feedback import problem
from ui.nav import Page

HOW_TO = (
    "Train a **Probing** run with **Probe every layer** ticked (Train tab): one probe per "
    "layer is trained on cached features, nearly for free. It shows where in the model "
    "the information your labels need is most accessible."
)


def probe_choices(endpoints: Endpoints) -> list[tuple[str, int]]:
    """Succeeded probing runs, sweeps first."""
    layered = {m["key"] for m in endpoints.methods if m["probes_layers"]}
    probes = [j for j in endpoints.jobs() if j["method"] in layered and j["status"] == "succeeded"]
    probes.sort(key=lambda j: j.get("knobs") != "all layers")
    return [(charts.run_label(j["id"], j["name"]), j["id"]) for j in probes]


def companion(endpoints: Endpoints, job: dict[str, Any]) -> dict[str, Any] | None:
    """The newest layer sweep of the same base model for another task, if there is one."""
    others = [
        j for j in endpoints.jobs()
        if j["status"] == "succeeded" and j["knobs"] == "all layers" and j["model"] == job["model"]
        and j.get("task") != job.get("task")
    ]  # fmt: skip
    return endpoints.job(int(others[0]["id"]), log_tail=0) if others else None


def show(endpoints: Endpoints, job_id: int | None) -> tuple[Any, str, Any]:
    """The layer chart, a line naming the best layer, and the curves of every task probed on
    this base model (this run's and another task's sweep, when there is one)."""
    if not job_id:
        return None, "", None
    try:
        job = endpoints.job(int(job_id), log_tail=0)
        other = companion(endpoints, job)
    except Exception as exc:  # noqa: BLE001
        return None, problem(exc, "reading the run"), None
    frame, order, best = charts.layer_accuracy(job.get("layer_accuracy") or [])
    if best is None:
        return (
            None,
            (
                "This probe trained one layer only. Queue a probing run with "
                "**Probe every layer** ticked to see every layer."
            ),
            None,
        )
    curves = [job] + ([other] if other and other.get("layer_accuracy") else [])
    series = [(f"#{j['id']} {j.get('task')}: {j.get('primary_metric')}", j["layer_accuracy"]) for j in curves]
    f1, metric = best.get("macro_f1"), job.get("primary_metric") or "accuracy"
    text = (
        f"Best layer: **{charts.layer_name(best['layer']).strip()}**: {metric} "
        f"{best.get('accuracy', best.get('score')):.3f}"
        + (f", macro-F1 {f1:.3f}" if f1 is not None else "")
        + f" ({len(order)} layers probed, embeddings first)."
    )
    if len(curves) > 1:
        text += f" Beside it: run #{other['id']}, {other.get('task')} on the same base model."
    return frame, text, charts.layer_curves(series)


def build_probing_tab(endpoints: Endpoints, tab: Page) -> None:
    """Lay out the Probing-by-layer tab and wire its events (call inside ``tab``)."""
    gr.Markdown(HOW_TO)
    with gr.Row(equal_height=True):
        run = gr.Dropdown(label="Probing run", choices=[], interactive=True, scale=4)
        refresh = gr.Button("Refresh list", size="sm", scale=1)
    best = gr.Markdown()
    plot = charts.plot(
        gr.BarPlot,
        "layer",
        "accuracy",
        "Accuracy by layer",
        color="marker",
        score=True,
        tooltip="all",
        color_map={charts.BEST: "#f97316", charts.OTHER: "#64748b"},
    )

    curves = charts.plot(
        gr.LinePlot,
        "layer",
        "score",
        "Score by layer, every task probed on this base model",
        color="task",
        score=True,
        elem_id="probing-curves",
    )

    def reload(current: int | None) -> Any:
        choices = probe_choices(endpoints)
        ids = [c[1] for c in choices]
        return gr.update(choices=choices, value=current if current in ids else (ids[0] if ids else None))

    private: dict[str, Any] = {"api_visibility": "private"}
    for trigger in (tab.select, refresh.click):
        trigger(reload, [run], [run], **private)
    run.change(lambda job_id: show(endpoints, job_id), [run], [plot, best, curves], **private)
