"""The Runs tab's charts of the shown job: loss, evaluation by epoch or layer, and the
learning-rate search (laid out here; ``ui.tabs.runs`` fills them)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui import charts
from ui.forms import shown


def evaluation_plot(title: str, label: str, x: str, x_title: str, **extra: Any) -> gr.LinePlot:
    """Accuracy and macro-F1 (0 to 1) against charts.epoch_curves' ``x`` column (epoch or layer)."""
    return charts.plot(
        gr.LinePlot,
        x,
        "value",
        title,
        color="metric",
        label=label,
        x_title=x_title,
        score=True,
        **extra,
    )


def detail_plots() -> list[Any]:
    """The shown job's curves (loss; evaluation by epoch or, for a probe sweep, by layer), its
    learning-rate search chart and the line under it, and a score's scatter of predicted against
    true: in the order ``_Handlers.tick`` fills them."""
    with gr.Row():
        # Zero-based y: the plot sizes its axis labels on the first draw only (new data does
        # not redraw), and from 0 the labels keep one width however the loss moves.
        loss = charts.plot(
            gr.LinePlot, "step", "loss", "Training loss", x_title="step", y_title="loss", y_lim=[0, None]
        )
        evals = evaluation_plot("Evaluation per epoch", "Evaluation", "epoch", "epoch")
        layers = evaluation_plot(
            "Evaluation per layer (probe sweep)",
            "Evaluation by layer",
            "layer",
            "layer (0 = embeddings)",
            elem_id="run-layers",
            visible=shown(False),
        )
    with gr.Row():
        search = charts.plot(
            gr.BarPlot,
            "lr",
            "held_out_loss",
            "Learning-rate search: held-out loss per candidate (lower is better)",
            color="outcome",
            label="Learning-rate search",
            x_title="learning rate",
            y_title="held-out loss",
            tooltip=["lr", "held_out_loss", "steps", "outcome"],
            elem_id="run-lr-search",
            visible=shown(False),
        )
        search_line = gr.Markdown(elem_id="run-lr-search-text")
    # a run whose prediction is a number (regression): predicted against true, one point a row
    scatter = gr.HTML(elem_id="run-scatter")
    return [loss, evals, layers, search, search_line, scatter]
