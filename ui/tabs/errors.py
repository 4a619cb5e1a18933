"""Error analysis tab: which evaluation examples a run gets wrong, how sure it was, where two
runs disagree, and how it does on another uploaded dataset with the same labels.

A confusion-matrix cell filters the examples to its true/predicted pair; the CSV button
always holds the examples as filtered and sorted on the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from ui.endpoints import Endpoints
from ui.error_views import (
    CELL_CLICK_JS,
    EXAMPLE_VIEWS,
    SEP,
    confusion_html,
    disagreements_table,
    examples_table,
    reliability_svg,
)
from ui.feedback import done, problem
from ui.nav import Page
from ui.tabs.compare import finished_choices
from ui.tabs.data import dataset_choices

OWN = ("Its evaluation set", 0)
ANY = ("any", "")
SORTS = [
    ("Most confident first", "confidence_desc"),
    ("Least confident first", "confidence_asc"),
    ("File order", "row"),
]


class _Handlers:
    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def reload(self, current: int | None) -> tuple[Any, Any, Any]:
        """Succeeded runs (keeps the chosen one, else the newest) and the datasets."""
        runs = finished_choices(self.endpoints)
        ids = [c[1] for c in runs]
        run = gr.update(choices=runs, value=current if current in ids else (ids[0] if ids else None))
        return run, gr.update(choices=runs), gr.update(choices=dataset_choices(self.endpoints))

    def sources(self, job_id: int | None, keep: int | None = None) -> tuple[Any, Any, Any]:
        """Where the run's examples can come from, and its labels for the filters."""
        if not job_id:
            return gr.update(choices=[OWN], value=0), gr.update(choices=[ANY]), gr.update(choices=[ANY])
        evaluations = self.endpoints.evaluations(int(job_id))
        choices = [
            OWN,
            *[(f"{e['dataset']} (dataset #{e['dataset_id']})", e["dataset_id"]) for e in evaluations],
        ]
        labels = self.endpoints.job(int(job_id), 0).get("evaluation", {}).get("labels") or []
        label_choices = [ANY, *[(label, label) for label in labels]]
        value = keep if keep in [c[1] for c in choices] else 0
        return (
            gr.update(choices=choices, value=value),
            gr.update(choices=label_choices, value=""),
            gr.update(choices=label_choices, value=""),
        )

    def show(
        self, job_id: int | None, source: int | None, wrong: bool, true: str, predicted: str, sort: str
    ) -> tuple[str, str, str, str, Any]:
        """Summary, confusion matrix, reliability diagram, examples and the CSV to download."""
        if not job_id:
            return "*No finished run yet.*", "", "", "", gr.DownloadButton(value=None, interactive=False)
        filters = {"wrong_only": wrong, "true_label": true or None, "predicted_label": predicted or None}
        where = {"sort": sort or "confidence_desc", "dataset_id": source or None}
        try:
            result = self.endpoints.predictions(int(job_id), **filters, **where)
            if result.get("kind") in EXAMPLE_VIEWS:
                return self._examples(int(job_id), result, filters, where)
            calibration = self.endpoints.calibration(int(job_id), source or None)
            labels, matrix, accuracy = self._confusion(int(job_id), source)
            csv = self.endpoints.predictions_csv(int(job_id), **filters, **where)
        except Exception as exc:  # noqa: BLE001 - e.g. a run from before predictions were kept
            return problem(exc, "reading the run's examples"), "", "", "", gr.DownloadButton(value=None)
        summary = (
            f"**{result['total']:,} examples** · accuracy {accuracy:.4f} · "
            f"expected calibration error {calibration['ece']:.3f}"
        )
        selected = (true, predicted) if true and predicted else None
        return (
            summary,
            confusion_html(labels, matrix, selected),
            reliability_svg(calibration),
            examples_table(result),
            gr.DownloadButton(value=csv.path, interactive=True),
        )

    def _examples(
        self, job_id: int, result: dict[str, Any], filters: dict[str, Any], where: dict[str, Any]
    ) -> tuple[str, str, str, str, Any]:
        """A run whose rows are not one label with a confidence (``EXAMPLE_VIEWS``: a number, a
        tag per word, a set of labels): its headline metrics, the predicted-against-true chart
        where its task draws one (a number), and its rows in the view's order."""
        unit, order, draw = EXAMPLE_VIEWS[result["kind"]]
        job = self.endpoints.job(job_id, 0)
        metrics = job.get("metrics") or {}
        shown = [f"{k} {metrics[k]:.4f}" for k in job.get("headline") or () if metrics.get(k) is not None]
        summary = f"**{result['total']:,} {unit}** · {' · '.join(shown)} · {order}"
        csv = self.endpoints.predictions_csv(job_id, **filters, **where)
        scatter = "" if where.get("dataset_id") else self.endpoints.api.prediction_scatter(job_id)
        return summary, scatter, "", draw(result), gr.DownloadButton(value=csv.path, interactive=True)

    def _confusion(self, job_id: int, source: int | None) -> tuple[list[str], list[list[int]], float]:
        if source:
            found = next(e for e in self.endpoints.evaluations(job_id) if e["dataset_id"] == source)
            return found["label_names"], found["confusion_matrix"], found["accuracy"]
        job = self.endpoints.job(job_id, 0)
        evaluation = job.get("evaluation") or {}
        return evaluation.get("labels") or [], evaluation.get("confusion_matrix") or [], job["accuracy"]

    @staticmethod
    def cell(evt: gr.SelectData) -> tuple[Any, Any, Any]:
        """A confusion-matrix cell: filter to its true/predicted pair (right or wrong)."""
        true, _, predicted = str(evt.value).partition(SEP)
        return False, true, predicted

    def evaluate(self, job_id: int | None, dataset_id: int | None) -> tuple[str, Any, Any, Any]:
        """Evaluate the run on the chosen dataset, then show its examples."""
        try:
            if not job_id or not dataset_id:
                raise ValueError("choose a run and a dataset to evaluate it on")
            result = self.endpoints.evaluate(int(job_id), int(dataset_id))
        except Exception as exc:  # noqa: BLE001
            return (problem(exc, "evaluating the run"), gr.skip(), gr.skip(), gr.skip())
        headline = self.endpoints.job(int(job_id), 0).get("headline") or ()
        note = done(evaluation_note(int(job_id), result, headline))
        return (note, *self.sources(int(job_id), keep=int(dataset_id)))

    def disagree(self, job_a: int | None, job_b: int | None) -> str:
        if not job_a or not job_b:
            return ""
        try:
            result = self.endpoints.disagreements(int(job_a), int(job_b))
        except Exception as exc:  # noqa: BLE001 - e.g. different evaluation rows
            return problem(exc, "comparing the runs", toast=False)
        return disagreements_table(result, (f"#{job_a} predicts", f"#{job_b} predicts"))


def evaluation_note(job_id: int, result: dict[str, Any], headline: Sequence[str]) -> str:
    """What an evaluation on another dataset scored: the run's task's headline metrics (a score
    run has no accuracy, a tag-per-word run reports entity F1)."""
    shown = ", ".join(
        f"{name.replace('_', '-')} {result[name]:.4f}" for name in headline if result.get(name) is not None
    )
    return f"Run #{job_id} on **{result['dataset']}**: {result['rows']:,} rows, {shown}."


def build_errors_tab(endpoints: Endpoints, tab: Page) -> None:
    """Lay out the Error analysis tab and wire its events (call inside ``tab``)."""
    h = _Handlers(endpoints)
    with gr.Row(equal_height=True):
        run = gr.Dropdown(label="Run", choices=[], interactive=True, scale=3, elem_id="errors-run")
        source = gr.Dropdown(label="Examples from", choices=[OWN], value=0, scale=2, elem_id="errors-source")
        refresh = gr.Button("Refresh", size="sm", scale=1)
    with gr.Row(equal_height=True):
        other_data = gr.Dropdown(label="Evaluate on another dataset (same labels)", choices=[], scale=3)
        evaluate = gr.Button("Evaluate", scale=1, elem_id="errors-evaluate")
    message = gr.Markdown(elem_id="errors-message")
    summary = gr.Markdown(elem_id="errors-summary")
    with gr.Row():
        confusion = gr.HTML(elem_id="errors-confusion", js_on_load=CELL_CLICK_JS)
        reliability = gr.HTML(elem_id="errors-reliability")
    with gr.Row(equal_height=True):
        wrong = gr.Checkbox(label="Wrong only", value=False)
        true = gr.Dropdown(label="True label", choices=[ANY], value="", elem_id="errors-true")
        predicted = gr.Dropdown(label="Predicted label", choices=[ANY], value="", elem_id="errors-predicted")
        sort = gr.Radio(SORTS, value="confidence_desc", label="Sort")
    download = gr.DownloadButton("Download CSV", interactive=False, elem_id="errors-csv")
    table = gr.HTML(elem_id="errors-table")
    with gr.Accordion("Where two runs disagree", open=False):
        other_run = gr.Dropdown(label="Compare with run", choices=[], interactive=True)
        disagreements = gr.HTML(elem_id="errors-disagree")

    private: dict[str, Any] = {"api_visibility": "private"}
    quiet: dict[str, Any] = {"show_progress": "hidden", **private}
    for trigger in (tab.select, refresh.click):
        trigger(h.reload, [run], [run, other_run, other_data], **private)
    run.change(h.sources, [run], [source, true, predicted], **quiet)
    shown = [summary, confusion, reliability, table, download]
    # One listener for every filter, its latest inputs winning: a cell click changes three of them
    # at once, and three listeners raced (an earlier call's examples and CSV could land last).
    gr.on(
        [c.change for c in (run, source, wrong, true, predicted, sort)],
        h.show,
        [run, source, wrong, true, predicted, sort],
        shown,
        trigger_mode="always_last",
        **quiet,
    )
    confusion.select(h.cell, None, [wrong, true, predicted], **private)
    evaluate.click(h.evaluate, [run, other_data], [message, source, true, predicted], **private)
    for component in (run, other_run):
        component.change(h.disagree, [run, other_run], [disagreements], **quiet)
