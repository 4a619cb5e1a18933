"""The Error analysis tab's drawings, from records shaped like the API's."""

from __future__ import annotations

import html
import re

from ui.error_views import SEP, confusion_html, examples_table, reliability_svg


def test_confusion_cells_carry_their_pair_escaped_and_mark_errors() -> None:
    labels = ['<b>"x"</b>', "pos"]
    page = confusion_html(labels, [[3, 1], [0, 5]], selected=(labels[0], "pos"))
    assert "<b>" not in page  # a label is text, never markup
    cells = re.findall(r'<td class="([^"]*)" data-cell="([^"]*)"[^>]*>(\d+)</td>', page)
    pairs = [tuple(html.unescape(key).split(SEP)) for _, key, _ in cells]
    assert pairs == [(a, b) for a in labels for b in labels]
    assert [int(n) for _, _, n in cells] == [3, 1, 0, 5]
    kinds = [kind.split() for kind, _, _ in cells]
    assert kinds == [["wb-right"], ["wb-wrong", "wb-selected"], [], ["wb-right"]]


def test_reliability_bars_stand_as_high_as_their_accuracy() -> None:
    bins = [
        {"low": 0.5, "high": 0.6, "rows": 4, "confidence": 0.55, "accuracy": 0.25},
        {"low": 0.9, "high": 1.0, "rows": 6, "confidence": 0.95, "accuracy": 1.0},
    ]
    svg = reliability_svg({"ece": 0.123, "bins": bins})
    heights = [float(h) for h in re.findall(r'class="wb-bin"[^>]*height="([\d.]+)"', svg)]
    assert len(heights) == 2 and heights[1] == 4 * heights[0]
    assert "expected calibration error 0.123" in svg


def test_examples_table_says_how_many_match_and_how_many_are_shown() -> None:
    row = {"row": 3, "text": "<i>great</i>", "pair": None, "true": "pos", "predicted": "neg",
           "confidence": 0.91, "correct": False}  # fmt: skip
    page = examples_table({"total": 50, "matching": 7, "rows": [row]})
    assert "7 of 50 examples match (first 1 shown; the CSV has them all)" in page
    assert "&lt;i&gt;great&lt;/i&gt;" in page and "0.910" in page and "Second text" not in page
