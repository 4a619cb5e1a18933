"""The sweep's Pareto chart: one clickable point per finished trial, the best one marked."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ui.pareto import pareto_svg


def trial(job_id: int, accuracy: float | None, params: int, front: bool, name: str = "run") -> dict[str, Any]:
    return {
        "job_id": job_id,
        "name": name,
        "accuracy": accuracy,
        "trainable_params": params,
        "pareto_by": {"trainable_params": front},
    }


def test_points_are_links_to_runs_and_the_best_is_marked() -> None:
    trials = [
        trial(1, 0.80, 20_000, True),
        trial(2, 0.85, 300_000, True, name="lora <r=32>"),
        trial(3, 0.79, 80_000, False),
        trial(4, None, 10_000, False),  # pruned: nothing to plot
    ]
    page = pareto_svg(trials, "trainable_params", "accuracy", best_id=2)
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])  # well-formed, names escaped
    points = {c.get("data-key"): c.get("class") for c in svg.iter("{http://www.w3.org/2000/svg}circle")}
    assert points == {"1": "wb-point wb-front", "2": "wb-point wb-best", "3": "wb-point wb-other"}
    assert "lora &lt;r=32&gt;" in page and "(log scale)" in page
    assert "Click a point to open its run" in page


def test_nothing_finished_yet() -> None:
    assert "No finished trial" in pareto_svg([trial(1, None, 5, False)], "trainable_params", "accuracy", None)


def test_an_accuracy_axis_never_leaves_zero_to_one() -> None:
    """Every trial at 1.0 (a toy task): the axis must not be padded to 2.0."""
    page = pareto_svg(
        [trial(1, 1.0, 10_000, True), trial(2, 1.0, 70_000, False)], "trainable_params", "accuracy", 1
    )
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])
    labels = [
        float(t.text) for t in svg.iter("{http://www.w3.org/2000/svg}text") if t.get("text-anchor") == "end"
    ]
    assert labels and max(labels) <= 1.0 and min(labels) >= 0.0


def test_a_run_with_an_interval_gets_an_error_bar_spanning_it() -> None:
    with_ci = {**trial(1, 0.80, 20_000, True), "score_ci": [0.70, 0.90]}
    page = pareto_svg([with_ci, trial(2, 0.85, 300_000, True)], "trainable_params", "accuracy", best_id=2)
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])
    point = next(c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("data-key") == "1")
    (bar,) = [
        line for line in svg.iter("{http://www.w3.org/2000/svg}line") if line.get("class") == "wb-error-bar"
    ]
    low, high = float(bar.get("y1")), float(bar.get("y2"))  # y grows downwards
    assert bar.get("x1") == bar.get("x2") == point.get("cx")
    assert (
        high < float(point.get("cy")) < low
        and abs((low - float(point.get("cy"))) - (float(point.get("cy")) - high)) < 0.5
    )


def test_the_axis_holds_the_error_bars() -> None:
    wide = {**trial(1, 0.95, 20_000, True), "score_ci": [0.82, 1.0]}
    page = pareto_svg([wide, trial(2, 0.97, 300_000, True)], "trainable_params", "accuracy", best_id=2)
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])
    (bar,) = [
        line for line in svg.iter("{http://www.w3.org/2000/svg}line") if line.get("class") == "wb-error-bar"
    ]
    from service.svg_charts import BOTTOM, HEIGHT, TOP

    assert TOP <= float(bar.get("y2")) < float(bar.get("y1")) <= HEIGHT - BOTTOM  # inside the plot
