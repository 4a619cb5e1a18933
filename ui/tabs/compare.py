"""Compare tab: finished runs side by side (table, curves, F1, confusion, config diff), a
shareable HTML report of them, and "Try it"."""

from __future__ import annotations

from typing import Any

import gradio as gr

from backend.errors import ConfigError
from service.svg_charts import compare_scatter_svg
from ui import charts, tables
from ui.endpoints import Endpoints
from ui.feedback import problem
from ui.nav import Page


def finished_choices(endpoints: Endpoints) -> list[tuple[str, int]]:
    """Succeeded runs (the ones with metrics and a model), newest first."""
    return [
        (charts.run_label(j["id"], j["name"]), j["id"])
        for j in endpoints.jobs()
        if j["status"] == "succeeded"
    ]


class _Handlers:
    """Event handlers; each returns values for its outputs and shows problems inline."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def reload(self, ticked: list[int] | None) -> Any:
        choices = finished_choices(self.endpoints)
        ids = {c[1] for c in choices}
        return gr.update(choices=choices, value=[i for i in ticked or [] if i in ids])

    def compare(self, ticked: list[int] | None) -> tuple[Any, ...]:
        """Everything the tab shows for the ticked runs; the selection goes to per-browser state."""
        try:
            result = self.endpoints.compare(list(ticked or []))
        except Exception as exc:  # noqa: BLE001
            return (gr.skip(), problem(exc, "comparing runs"), *(gr.skip(),) * 8)
        f1, _ = charts.per_class_f1(result)
        return (
            list(ticked or []),
            "",
            tables.to_html(tables.compare_table(result), caption="Side by side")
            + tables.caption_html(tables.significance_caption(result))
            + pooled_html(result),
            charts.compare_loss(result),
            charts.compare_eval(result),
            "<b>Score (primary metric) vs trainable parameters</b>" + compare_scatter_svg(result),
            f1,
            tables.confusion_html(result),
            tables.to_html(
                tables.config_diff(result),
                caption="Config differences (only the settings that differ)",
                empty="The runs' settings are identical.",
            ),
            gr.update(value=None, visible="hidden"),  # a report of the previous runs no longer fits
        )

    def report(self, selection: list[int] | None) -> tuple[Any, str]:
        """The compared runs as one HTML file to download and share."""
        try:
            if not selection:
                raise ConfigError("compare some runs first; the report covers the runs compared")
            path = self.endpoints.report(job_ids=list(selection)).path
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "writing the report")
        return gr.update(value=path, visible=True), ""

    def predict(self, selection: list[int] | None, text: str, pair: str) -> tuple[Any, str]:
        """Every compared run's prediction for one text."""
        try:
            if not selection:
                raise ConfigError("compare some runs first; their models answer here")
            if not (text or "").strip():
                raise ConfigError("type a text to classify")
            pairs = [pair] if (pair or "").strip() else None
            results = self.endpoints.api.predict(list(selection), [text], pairs)
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "predicting")
        return tables.to_html(tables.predictions_table(results), caption="Predictions"), ""


def pooled_html(result: Any) -> str:
    """The seeds-pooled table, when some compared runs differ only in seed."""
    frame = tables.pooled_table(result)
    if frame.empty:
        return ""
    return tables.to_html(frame, caption="Seeds pooled: runs that differ only in seed, mean ± sd over n runs")


def _plots() -> list[Any]:
    """Loss, accuracy, accuracy-vs-size and per-class F1 charts (no fixed height: it would
    cut off the legend)."""
    with gr.Row():
        loss = charts.plot(gr.LinePlot, "step", "loss", "Training loss", color="run")
        evals = charts.plot(
            gr.LinePlot,
            "epoch",
            "score",
            "Evaluation score (primary metric) per epoch",
            color="run",
            score=True,
        )
    with gr.Row():
        # SVG, as the Sweeps page's Pareto chart: the native plots draw no error bars
        scatter = gr.HTML(label="Score vs trainable parameters", elem_id="compare-scatter")
        f1 = charts.plot(
            gr.BarPlot,
            "bar",
            "f1",
            "Per-class F1",
            color="run",
            score=True,
            x_title="class · run",
            x_label_angle=-30,
        )
    return [loss, evals, scatter, f1]


def _try_it() -> tuple[gr.Textbox, gr.Textbox, gr.Button, gr.HTML, gr.Markdown]:
    gr.Markdown("### Try it\nOne text in; every compared run's prediction and confidence out.")
    with gr.Row(equal_height=True):
        text = gr.Textbox(label="Text to classify", scale=4)
        pair = gr.Textbox(label="Second text (pair datasets only)", scale=2)
        predict = gr.Button("Predict", variant="primary", scale=1)
    return text, pair, predict, gr.HTML(elem_id="predictions"), gr.Markdown()


def build_compare_tab(endpoints: Endpoints, tab: Page) -> None:
    """Lay out the Compare tab and wire its events (call inside ``tab``)."""
    h = _Handlers(endpoints)
    selection = gr.State([])
    with gr.Row(equal_height=True):
        runs = gr.CheckboxGroup(
            label="Finished runs", choices=[], scale=5, info="Tick the runs to put side by side."
        )
        with gr.Column(scale=1, min_width=160):
            compare = gr.Button("Compare ticked runs", variant="primary")
            refresh = gr.Button("Refresh list", size="sm")
    message = gr.Markdown()
    table = gr.HTML(elem_id="compare-table")
    with gr.Row(equal_height=True):
        report = gr.Button("Download report (HTML)", size="sm", scale=1)
        # Hidden until there is a file (an empty box would invite dropping one in). "hidden",
        # not False: a component first rendered invisible here never appeared on the update.
        report_file = gr.File(
            label="Report", interactive=False, visible="hidden", scale=4, elem_id="compare-report"
        )
    plots = _plots()
    gr.Markdown("**Confusion matrices** (rows: true label, columns: predicted)")
    confusion = gr.HTML()
    diff = gr.HTML(elem_id="config-diff")
    text, pair, predict, predictions, predict_message = _try_it()

    private: dict[str, Any] = {"api_visibility": "private"}
    for trigger in (tab.select, refresh.click):
        trigger(h.reload, [runs], [runs], **private)
    outputs = [selection, message, table, *plots, confusion, diff, report_file]
    compare.click(h.compare, [runs], outputs, **private)
    report.click(h.report, [selection], [report_file, message], **private)
    for trigger in (predict.click, text.submit):
        trigger(h.predict, [selection, text, pair], [predictions, predict_message], **private)
