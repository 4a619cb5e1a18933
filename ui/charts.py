"""Gradio's native plots (LinePlot, BarPlot, ScatterPlot) and the long-format frames they draw.

:func:`plot` makes every plot the tabs show. The frames are pure functions of the API's
dicts (no I/O), so they are easy to test; every one has its columns even when there is
nothing to draw, because a plot needs its x/y columns to exist. Line charts of metric
series are all built by :func:`series_frame`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeVar

import gradio as gr
import pandas as pd

BEST, OTHER = "best layer", "other layers"
SCORE_AXIS = (0, 1)  # accuracy and F1: a fixed axis, so plots side by side read alike
Plot = TypeVar("Plot", gr.LinePlot, gr.BarPlot, gr.ScatterPlot)


def plot(kind: type[Plot], x: str, y: str, title: str, *, score: bool = False, **options: Any) -> Plot:
    """A native plot of a frame from this module (call inside a Blocks context).

    ``label`` (what the page and the tests know the plot by) is ``title`` unless
    ``options`` name one; ``score`` fixes the y axis to 0..1 for accuracy and F1. The rest
    of ``options`` (color, axis titles, tooltip, ...) go to the plot as they are.
    """
    options.setdefault("label", title)
    if score:
        options["y_lim"] = list(SCORE_AXIS)
    return kind(x=x, y=y, title=title, **options)


def series_frame(
    lines: Iterable[tuple[str, list[list[float]] | None]], x: str, y: str, color: str | None = None
) -> pd.DataFrame:
    """Metric series as (x, y) rows for a line plot; with ``color``, one line per name.

    ``lines`` pairs a line's name with its [[x, value], ...] points (as the API's series
    hold them); without ``color`` the names are dropped and the points drawn as one line.
    """
    columns = [x, y, color] if color else [x, y]
    rows = [[p[0], p[1], name][: len(columns)] for name, points in lines for p in points or []]
    return pd.DataFrame(rows, columns=columns)


def run_label(job_id: int | str, name: str | None) -> str:
    """How a run is named in legends: "#3 lora r=8 · tiny"."""
    return f"#{job_id} {name}" if name else f"#{job_id}"


# Gradio's bar plot orders a text x axis as text ("10–11" before "6–7", "0.5–1" before "0–0.5"),
# and a list-valued ``sort`` draws no bar at all (gradio 6.17.3, seen in Chromium; issue 50). So
# each label of an ordered chart starts with its rank spelled in zero-width characters, in
# ascending code-point order: text order is then the order given, whatever the labels say
# (negative scores, numeric class names), and the axis shows the labels alone.
RANK_DIGITS = "\u200b\u200c\u200d\u2060"
SLANT_FROM = 12  # bars in a chart of labels above which their labels are slanted


def in_order(labels: list[str]) -> list[str]:
    """``labels`` made to sort as text in the order given (see RANK_DIGITS); they read the same."""
    base = len(RANK_DIGITS)
    width = max(1, math.ceil(math.log(max(len(labels), 2), base)))
    return [_rank(i, width) + label for i, label in enumerate(labels)]


def _rank(index: int, width: int) -> str:
    digits = []
    for _ in range(width):
        index, digit = divmod(index, len(RANK_DIGITS))
        digits.append(RANK_DIGITS[digit])
    return "".join(reversed(digits))


def shown(label: str) -> str:
    """A chart label as a person reads it (the rank prefix of ``in_order`` left out)."""
    return label.lstrip(RANK_DIGITS)


def label_distribution(preview: dict[str, Any]) -> dict[str, Any]:
    """The task's chart of the label column (``label_chart``: rows per label, bins of a score,
    entities per type), bars in the task's order, as an update of the chart's data and titles."""
    chart = preview.get("label_chart") or {
        "title": "Label distribution",
        "x": "label",
        "y": "rows",
        "bars": [],
    }
    bars = chart["bars"]
    frame = pd.DataFrame(
        {"label": in_order([str(b["name"]) for b in bars]), "rows": [b["count"] for b in bars]},
        columns=["label", "rows"],
    )
    # many bars (28 emotions, 17 parts of speech): slanted labels, which would overlap level
    angle = -40 if len(bars) > SLANT_FROM else 0
    # Only the block's label says what is counted; the plot's own titles stay fixed: on gradio
    # 6.31 an update that changes the plot's title, x_title or y_title draws the previous
    # update's bars (rows per score bin under "Entities per type"; checked in Chromium), while
    # value, label and x_label_angle change safely.
    label = f"{chart['title']} · {chart['y']} per {chart['x']}"
    return gr.update(value=frame, label=label, x_label_angle=angle)


def token_histogram(preview: dict[str, Any]) -> pd.DataFrame:
    """Rows per token-length bin: ``tokens`` is a bin's range as text ("8–9"), in numeric order."""
    bins = preview.get("token_histogram") or []
    labels = [f"{b['start']}" if b["end"] - b["start"] == 1 else f"{b['start']}–{b['end'] - 1}" for b in bins]
    return pd.DataFrame(
        {"tokens": in_order(labels), "rows": [b["count"] for b in bins]}, columns=["tokens", "rows"]
    )


def loss_curve(series: dict[str, Any]) -> pd.DataFrame:
    """Training loss by step."""
    return series_frame([("train_loss", series.get("train_loss"))], "step", "loss")


EPOCH_METRICS = {"eval_accuracy": "accuracy", "eval_macro_f1": "macro-F1"}
LAYER_METRICS = {"layer_accuracy": "accuracy", "layer_macro_f1": "macro-F1"}


def is_sweep(series: dict[str, Any]) -> bool:
    """Whether the series are a probe layer sweep's (results by layer, not by epoch)."""
    return bool(series.get("layer_accuracy") or series.get("layer_score"))


def epoch_curves(series: dict[str, Any]) -> pd.DataFrame:
    """Evaluation accuracy and macro-F1 by epoch (a probe sweep's: by ``layer``), one ``metric`` per
    line; a task without accuracy (regression): its score, the primary metric."""
    names, x = (LAYER_METRICS, "layer") if is_sweep(series) else (EPOCH_METRICS, "epoch")
    if not any(series.get(key) for key in names):
        names = {"layer_score" if x == "layer" else "eval_score": "score (primary metric)"}
    return series_frame(((label, series.get(key)) for key, label in names.items()), x, "value", "metric")


def layer_accuracy(layers: list[dict[str, Any]]) -> tuple[pd.DataFrame, list[str], dict[str, Any] | None]:
    """Accuracy (a regression run's: its score) per probed layer, the x order (embeddings first)
    and the best layer."""
    frame = pd.DataFrame(columns=["layer", "accuracy", "macro_f1", "marker"])
    if not layers:
        return frame, [], None
    ordered = sorted(layers, key=lambda r: r["layer"])
    # a task without accuracy (regression): its score, the primary metric, on the same axis
    value = {id(r): r["accuracy"] if "accuracy" in r else r.get("score") for r in ordered}
    best = max(ordered, key=lambda r: (value[id(r)], r.get("macro_f1") or 0.0))
    width = len(str(ordered[-1]["layer"]))
    names = [layer_name(r["layer"], width) for r in ordered]
    frame = pd.DataFrame(
        {
            "layer": names,
            "accuracy": [value[id(r)] for r in ordered],
            "macro_f1": [r.get("macro_f1") for r in ordered],
            "marker": [BEST if r is best else OTHER for r in ordered],
        }
    )
    return frame, names, best


def layer_curves(series: list[tuple[str, list[dict[str, Any]]]]) -> pd.DataFrame:
    """Each named layer table as a line of its primary score (or accuracy) by layer number."""
    rows = [[r["layer"], r["accuracy"] if "accuracy" in r else r.get("score"), name]
            for name, layers in series for r in sorted(layers, key=lambda r: r["layer"])]  # fmt: skip
    return pd.DataFrame(rows, columns=["layer", "score", "task"])


def layer_name(layer: int, width: int = 1) -> str:
    """0 is the embedding output, 1..L the transformer layers.

    Right-aligned to ``width`` digits: the bar plot orders its x labels as text (a
    list-valued ``sort`` breaks Gradio's plot), and " 9" sorts before "10".
    """
    return f"{layer:>{width}}" + (" embeddings" if layer == 0 else "")


def _runs(compare: dict[str, Any]) -> dict[str, str]:
    """Job id (as the series dict keys it) -> legend label."""
    return {str(row["id"]): run_label(row["id"], row["name"]) for row in compare.get("table", [])}


def _per_run(compare: dict[str, Any], key: str, x: str, y: str) -> pd.DataFrame:
    """Series ``key`` of every compared run as (x, y, run) rows, one ``run`` per line."""
    runs = _runs(compare)
    lines = (
        (runs.get(str(job_id), f"#{job_id}"), series.get(key))
        for job_id, series in (compare.get("series") or {}).items()
    )
    return series_frame(lines, x, y, "run")


def compare_loss(compare: dict[str, Any]) -> pd.DataFrame:
    """Every run's training loss by step."""
    return _per_run(compare, "train_loss", "step", "loss")


def compare_eval(compare: dict[str, Any]) -> pd.DataFrame:
    """Every run's evaluation score (its primary metric: accuracy, micro-F1, Spearman...) by epoch;
    runs from before the score was recorded per epoch: their accuracy. Layer sweeps have none:
    they are by layer."""
    runs = _runs(compare)
    lines = (
        (runs.get(str(job_id), f"#{job_id}"), series.get("eval_score") or series.get("eval_accuracy"))
        for job_id, series in (compare.get("series") or {}).items()
    )
    return series_frame(lines, "epoch", "score", "run")


def per_class_f1(compare: dict[str, Any]) -> tuple[pd.DataFrame, list[str]]:
    """F1 per class per run, and the x order.

    Gradio's bar plot stacks bars that share an x value, so each bar gets its own
    x ("pos · #3"), ordered class by class: the runs of one class stand side by side. The
    classes come in the runs' own order (numerically when every name is a number: "2" before
    "10"), and each x carries ``in_order``'s rank, since the plot orders its x values as text.
    """
    runs = _runs(compare)
    scores = {str(job_id): f1s or {} for job_id, f1s in (compare.get("per_class_f1") or {}).items()}
    classes = list(dict.fromkeys(str(label) for f1s in scores.values() for label in f1s))
    if classes and all(_is_number(c) for c in classes):
        classes.sort(key=float)
    pairs = [(c, job_id) for c in classes for job_id, f1s in scores.items() if c in map(str, f1s)]
    bars = dict(zip(pairs, in_order([f"{c} · #{job_id}" for c, job_id in pairs]), strict=True))
    rows = [
        {
            "class": str(label),
            "f1": f1,
            "run": runs.get(job_id, f"#{job_id}"),
            "bar": bars[str(label), job_id],
        }
        for job_id, f1s in scores.items()
        for label, f1 in f1s.items()
    ]
    return pd.DataFrame(rows, columns=["class", "f1", "run", "bar"]), list(bars.values())


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


CHOSEN, DROPPED, DIVERGED = "chosen", "dropped", "diverged"
TIED = "lower, within the noise (not taken)"  # the best, when the default was kept on a tie


def chosen_tie(search: dict[str, Any] | None) -> list[float] | None:
    """(best rate, loss gap, its standard error) when the search kept the default on a tie."""
    search = search or {}
    candidates = search.get("candidates") or []
    return next((c.get("tie_with") for c in candidates if c["lr"] == search.get("chosen")), None)


def lr_search(search: dict[str, Any] | None) -> pd.DataFrame:
    """Held-out loss per learning-rate candidate (the value after its last round).

    ``lr`` is text in ascending order ("0.0003" ...): the bar plot orders labels as text,
    so candidates get a zero-padded rank prefix to keep the numeric order.
    """
    rows = []
    candidates = sorted((search or {}).get("candidates") or [], key=lambda c: c["lr"])
    tie = chosen_tie(search)
    for rank, c in enumerate(candidates):
        outcome = DIVERGED if c["diverged"] else CHOSEN if c["lr"] == search["chosen"] else DROPPED
        if tie and c["lr"] == tie[0]:
            outcome = TIED
        loss = None if c["diverged"] or not math.isfinite(c["eval_loss"]) else c["eval_loss"]
        rows.append(
            {
                "lr": f"{rank + 1}. {c['lr']:g}",
                "held_out_loss": loss if loss is not None else 0.0,
                "outcome": outcome,
                "steps": c["steps"],
            }
        )
    return pd.DataFrame(rows, columns=["lr", "held_out_loss", "outcome", "steps"])
