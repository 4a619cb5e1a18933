"""What the Error analysis tab draws: a confusion matrix whose cells filter the examples, a
reliability diagram, and the examples and disagreement tables. Pure functions of the API's
records (no Gradio), so they are tested without a server."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from ui import tables

# A cell click sends "true<TAB>predicted" (labels may hold any other character) to the server.
CELL_CLICK_JS = """
element.addEventListener('click', (event) => {
  const cell = event.target.closest('[data-cell]');
  if (cell) trigger('select', {index: 0, value: cell.dataset.cell, selected: true});
});
"""
SEP = "\t"
SIZE, PAD = 300, 40


def confusion_html(labels: list[str], matrix: list[list[int]], selected: tuple[str, str] | None) -> str:
    """Rows: true label; columns: predicted. Off-diagonal cells with rows are the errors."""
    if not labels:
        return ""
    esc = html.escape
    head = "".join(f"<th>{esc(p)}</th>" for p in labels)
    body = []
    for i, true in enumerate(labels):
        cells = []
        for j, predicted in enumerate(labels):
            kind = "wb-right" if i == j else ("wb-wrong" if matrix[i][j] else "")
            if selected == (true, predicted):
                kind += " wb-selected"
            key = esc(f"{true}{SEP}{predicted}", quote=True)
            title = esc(f"true {true}, predicted {predicted}: show these examples", quote=True)
            cells.append(f'<td class="{kind}" data-cell="{key}" title="{title}">{matrix[i][j]}</td>')
        body.append(f"<tr><th>{esc(true)}</th>{''.join(cells)}</tr>")
    thead = f"<thead><tr><th>true ↓ / predicted →</th>{head}</tr></thead>"
    table = f"<table>{thead}<tbody>{''.join(body)}</tbody></table>"
    caption = '<div class="wb-caption">Confusion matrix: click a cell to list its examples</div>'
    return f'{caption}<div class="wb-table wb-confusion">{table}</div>'


def reliability_svg(calibration: dict[str, Any]) -> str:
    """Accuracy per confidence bin against the diagonal of perfect calibration."""
    inner = SIZE - 2 * PAD

    def x(v: float) -> float:
        return PAD + v * inner

    def y(v: float) -> float:
        return SIZE - PAD - v * inner

    parts = [
        f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#9ca3af" stroke-dasharray="4 3"/>',
        f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(0)}" stroke="currentColor"/>',
        f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(0)}" y2="{y(1)}" stroke="currentColor"/>',
    ]
    for b in calibration["bins"]:
        width = (b["high"] - b["low"]) * inner
        top = y(b["accuracy"])
        parts.append(
            f'<rect class="wb-bin" x="{x(b["low"]) + 1:.1f}" y="{top:.1f}" width="{width - 2:.1f}" '
            f'height="{y(0) - top:.1f}" fill="#2563eb" fill-opacity="0.7"><title>confidence '
            f"{b['low']:.1f}–{b['high']:.1f}: {b['rows']} rows, mean confidence {b['confidence']:.3f}, "
            f"accuracy {b['accuracy']:.3f}</title></rect>"
        )
    for v in (0, 0.5, 1):
        parts.append(
            f'<text x="{x(v)}" y="{SIZE - PAD + 16}" text-anchor="middle" font-size="11">{v:g}</text>'
        )
        parts.append(f'<text x="{PAD - 6}" y="{y(v) + 4}" text-anchor="end" font-size="11">{v:g}</text>')
    parts.append(f'<text x="{SIZE / 2}" y="{SIZE - 6}" text-anchor="middle" font-size="12">confidence</text>')
    parts.append(f'<text x="12" y="{PAD - 14}" font-size="12">accuracy</text>')
    title = f"Reliability diagram · expected calibration error {calibration['ece']:.3f}"
    svg = f'<svg viewBox="0 0 {SIZE} {SIZE}" width="{SIZE}" height="{SIZE}" role="img">{"".join(parts)}</svg>'
    return f'<div class="wb-caption">{html.escape(title)}</div>{svg}'


def examples_table(result: dict[str, Any]) -> str:
    """The examples of ``/predictions``: row, text (and pair), true, predicted, confidence."""
    has_pair = any(r.get("pair") for r in result["rows"])
    first = ["Row", "Text", *(["Second text"] if has_pair else []), "True", "Predicted"]
    if result.get("kind") == "score":  # a number predicted: the residual instead of a confidence
        rows = [
            [r["row"], r["text"], *([r["pair"]] if has_pair else []), f"{r['true']:.3g}",
             f"{r['predicted']:.3f}", f"{r['error']:+.3f}"]
            for r in result["rows"]
        ]  # fmt: skip
        columns = [*first, "Error"]
    else:
        rows = [
            [r["row"], r["text"], *([r["pair"]] if has_pair else []), r["true"], r["predicted"],
             f"{r['confidence']:.3f}", "✓" if r["correct"] else "✗"]
            for r in result["rows"]
        ]  # fmt: skip
        columns = [
            "Row",
            "Text",
            *(["Second text"] if has_pair else []),
            "True",
            "Predicted",
            "Confidence",
            "",
        ]
    shown = len(rows)
    caption = f"{result['matching']:,} of {result['total']:,} examples match"
    if shown < result["matching"]:
        caption += f" (first {shown:,} shown; the CSV has them all)"
    return tables.to_html(pd.DataFrame(rows, columns=columns), caption=caption, empty="No example matches.")


def tagged_examples(result: dict[str, Any]) -> str:
    """A tag-per-word run's sentences, the most errors first: gold and predicted spans side by side."""
    from ui.tagged import sentence_html

    rows = []
    for r in result["rows"]:
        words, plain = str(r["text"]).split(" "), bool(r.get("plain"))
        gold = {
            "words": words,
            "tags": str(r["true"]).split(" "),
            "entities": r.get("true_entities"),
            "plain": plain,
        }
        predicted = {"words": words, "tags": str(r["predicted"]).split(" "),
                     "entities": r.get("predicted_entities"), "plain": plain}  # fmt: skip
        rows.append([r["row"], r["errors"], sentence_html(gold), sentence_html(predicted)])
    caption = f"{result['matching']:,} of {result['total']:,} sentences match, the most errors first"
    if len(rows) < result["matching"]:
        caption += f" (first {len(rows):,} shown; the CSV has them all)"
    frame = pd.DataFrame(rows, columns=["Row", "Errors", "Gold", "Predicted"])
    return tables.to_html(frame, caption=caption, empty="No sentence matches.")


def label_set_examples(result: dict[str, Any]) -> str:
    """A label-set run's rows, the most errors first: the gold and predicted labels, and the ones
    it missed and added (``true``, ``predicted``, ``missed``, ``extra``: lists of names)."""
    has_pair = any(r.get("pair") for r in result["rows"])

    def names(row: dict[str, Any], key: str, kind: str = "") -> Any:
        shown = ", ".join(html.escape(str(n)) for n in row.get(key) or []) or "–"
        return tables.Html(f'<span class="{kind}">{shown}</span>') if kind and row.get(key) else shown

    rows = [
        [r["row"], r["text"], *([r["pair"]] if has_pair else []), names(r, "true"), names(r, "predicted"),
         names(r, "missed", "wb-missed"), names(r, "extra", "wb-extra")]
        for r in result["rows"]
    ]  # fmt: skip
    columns = ["Row", "Text", *(["Second text"] if has_pair else []), "True", "Predicted", "Missed", "Extra"]
    caption = f"{result['matching']:,} of {result['total']:,} examples match, the most errors first"
    if len(rows) < result["matching"]:
        caption += f" (first {len(rows):,} shown; the CSV has them all)"
    return tables.to_html(pd.DataFrame(rows, columns=columns), caption=caption, empty="No example matches.")


# how error analysis draws the examples of a task's view kind other than "label" (which has its
# confusion matrix and reliability diagram): what a row is, in what order, and the table
EXAMPLE_VIEWS: dict[str, tuple[str, str, Any]] = {
    "score": ("examples", "the largest errors first", examples_table),
    "tags": ("sentences", "the most errors first", tagged_examples),
    "labels": ("examples", "the most missed and extra labels first", label_set_examples),
}


def _with_confidence(label: str, confidence: float | None) -> str:
    return label if confidence is None else f"{label} ({confidence:.2f})"


def disagreements_table(result: dict[str, Any], names: tuple[str, str]) -> str:
    a, b = names
    rows = [
        [r["row"], r["text"], r["true"], _with_confidence(r["a_predicted"], r["a_confidence"]),
         _with_confidence(r["b_predicted"], r["b_confidence"])]
        for r in result["rows"]
    ]  # fmt: skip
    caption = f"The runs disagree on {result['disagree']:,} of {result['total']:,} examples"
    frame = pd.DataFrame(rows, columns=["Row", "Text", "True", a, b])
    return tables.to_html(frame, caption=caption, empty="They agree on every example.")
