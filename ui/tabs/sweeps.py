"""Sweeps tab: pick a sweep, see every trial, the Pareto front of accuracy against a cost
(chosen by the person), the best run marked; a point or a row opens its run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ui import tables
from ui.endpoints import Endpoints
from ui.feedback import done, problem
from ui.nav import Page
from ui.pacing import pace
from ui.pareto import COSTS, POINT_CLICK_JS, pareto_svg

REFRESH_SECONDS = 3.0  # while a sweep runs (ui.pacing slows it down otherwise)
COST_CHOICES = [(label.split(" (")[0], key) for key, (label, _) in COSTS.items()]
TRIAL_COLUMNS = [
    "Run",
    "Settings",
    "Status",
    "Score",  # the task's primary metric: accuracy, else its value and name ("0.880 spearman")
    "Macro-F1",
    "Trainable",
    "Time",
    "Adapter",
    "Pareto",
]


@dataclass
class SweepsTab:
    """What other tabs need: the run a click asked to open, and the run whose settings the
    Train tab should take ("use these settings")."""

    opened: gr.State
    use: gr.State
    timer: gr.Timer


def sweep_choices(endpoints: Endpoints) -> list[tuple[str, int]]:
    return [choice(s) for s in endpoints.sweeps()]


def choice(sweep: dict[str, Any]) -> tuple[str, int]:
    """A sweep as the dropdown lists it: its status in the label."""
    return f"#{sweep['id']} {sweep['name']} ({sweep['status']})", sweep["id"]


def header(detail: dict[str, Any]) -> str:
    """The sweep's status line and its best run."""
    kind = {"grid": "Grid", "search": "Optuna search", "methods": "Methods"}.get(
        detail["kind"], detail["kind"]
    )
    line = (
        f"**{kind}** · {detail['status']} · {detail['trials_done']}/{detail['trials_planned']} trials ended"
        + (f" · {detail['pruned']} pruned" if detail.get("pruned") else "")
    )
    best = next((t for t in detail["points"] if t["job_id"] == detail["best_job_id"]), None)
    if best is not None:
        score = tables.number(best[detail["objective"]], 4)
        if best["n"] > 1:  # seeds pooled: the point is their mean
            spread = tables.number(best["spread"], 4)
            score = f"mean {score} ± {spread} over {best['n']} seeds (its best seed's run)"
        line += (
            f"\n\n**Best run: #{best['job_id']}** {best['name']} · {detail['objective']} {score} · "
            f"{best['trainable_params'] or 0:,} trainable parameters"
        )
    return line


def trials_table(detail: dict[str, Any]) -> str:
    rows = [
        [
            f"#{t['job_id']}",
            " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in t["params"].items()),
            t["status"],
            tables.score_text(t),
            tables.number(t["macro_f1"], 4),
            "–" if t["trainable_params"] is None else f"{t['trainable_params']:,}",
            tables.duration(t["train_seconds"]),
            tables.size(t["adapter_bytes"]),
            ("★ best" if t["job_id"] == detail["best_job_id"] else "") + (" front" if t["pareto"] else ""),
        ]
        for t in detail["trials"]
    ]
    return tables.to_html(
        pd.DataFrame(rows, columns=TRIAL_COLUMNS),
        keys=[t["job_id"] for t in detail["trials"]],
        empty="No trial yet: a search asks for its trials one by one.",
    )


class _Handlers:
    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def reload(self, current: int | None) -> Any:
        """The sweeps, newest first; keeps the chosen one, else picks the newest."""
        choices = sweep_choices(self.endpoints)
        ids = [c[1] for c in choices]
        return gr.update(choices=choices, value=current if current in ids else (ids[0] if ids else None))

    def show(self, sweep_id: int | None, cost: str) -> tuple[str, str, str]:
        if not sweep_id:
            return "*No sweep yet: start one from the Train tab (Sweep).*", "", ""
        try:
            detail = self.endpoints.sweep(int(sweep_id))
        except Exception as exc:  # noqa: BLE001 - e.g. deleted meanwhile
            return problem(exc, "reading the sweep"), "", ""
        chart = pareto_svg(
            detail["points"], cost or "trainable_params", detail["objective"], detail["best_job_id"]
        )
        return header(detail), chart, trials_table(detail)

    def tick(self, sweep_id: int | None, cost: str, last: Any) -> tuple[Any, ...]:
        """The timer's refresh: the sweep list (each choice carries its sweep's status) and the
        chosen sweep; only what changed is sent (a redraw costs every open page)."""
        sweeps = self.endpoints.sweeps()
        choices = [choice(s) for s in sweeps]
        shown = self.show(sweep_id, cost)
        previous = last or [None, None, None, None, None]
        # the choices alone: the value stays the person's choice
        listed = gr.skip() if choices == previous[0] else gr.update(choices=choices)
        changed = (gr.skip() if new == old else new for new, old in zip(shown, previous[1:4], strict=True))
        interval, seconds = pace(any(s["status"] == "running" for s in sweeps), REFRESH_SECONDS, previous[4])
        return (listed, *changed, [choices, *shown, seconds], interval)

    def cancel(self, sweep_id: int | None) -> str:
        try:
            detail = self.endpoints.cancel_sweep(int(sweep_id or 0))
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "cancelling the sweep")
        return done(f"Sweep #{detail['id']} is {detail['status']}.")

    def use_best(self, sweep_id: int | None) -> tuple[Any, str]:
        """The best run's job id, for the Train tab to fill its settings from."""
        try:
            detail = self.endpoints.sweep(int(sweep_id or 0))
            if detail["best_job_id"] is None:
                return gr.skip(), problem(ValueError("no trial has finished yet"), "using the best settings")
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "using the best settings")
        return detail["best_job_id"], ""

    def report(self, sweep_id: int | None) -> tuple[Any, str]:
        """The sweep as one self-contained HTML file (trials, Pareto charts, configs)."""
        try:
            path = self.endpoints.report(sweep_id=int(sweep_id or 0)).path
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "writing the report")
        return gr.update(value=path, visible=True), ""

    @staticmethod
    def open_run(evt: gr.SelectData) -> Any:
        """The job id of the clicked point or row."""
        return int(evt.index) if evt.index is not None else gr.skip()


def build_sweeps_tab(endpoints: Endpoints, tab: Page) -> SweepsTab:
    """Lay out the Sweeps tab and wire its events (call inside ``tab``)."""
    h = _Handlers(endpoints)
    opened, use = gr.State(None), gr.State(None)
    with gr.Row(equal_height=True):
        sweep = gr.Dropdown(label="Sweep", choices=[], interactive=True, scale=4, elem_id="sweep-pick")
        refresh = gr.Button("Refresh", size="sm", scale=1)
        cancel = gr.Button("Cancel sweep", size="sm", variant="stop", scale=1)
    summary = gr.Markdown(elem_id="sweep-summary")
    cost = gr.Radio(COST_CHOICES, value="trainable_params", label="Accuracy against", elem_id="sweep-cost")
    chart = gr.HTML(elem_id="sweep-pareto", js_on_load=POINT_CLICK_JS)
    trials = gr.HTML(elem_id="sweep-trials", js_on_load=POINT_CLICK_JS)
    with gr.Row(equal_height=True):
        use_best = gr.Button("Use the best run's settings in the Train tab", size="sm", elem_id="sweep-use")
        report = gr.Button("Download report (HTML)", size="sm", elem_id="sweep-report")
    # "hidden", not False: a component that starts invisible is not shown by a later update here
    report_file = gr.File(label="Report", interactive=False, visible="hidden", elem_id="sweep-report-file")
    message = gr.Markdown()

    private: dict[str, Any] = {"api_visibility": "private"}
    quiet: dict[str, Any] = {"show_progress": "hidden", **private}
    for trigger in (tab.select, refresh.click):
        trigger(h.reload, [sweep], [sweep], **private)
    for trigger in (sweep.change, cost.change):
        trigger(h.show, [sweep, cost], [summary, chart, trials], **quiet)
    last = gr.State(None)
    timer = gr.Timer(REFRESH_SECONDS, active=False)  # ticks only while the tab is shown
    timer.tick(h.tick, [sweep, cost, last], [sweep, summary, chart, trials, last, timer], **quiet)
    cancel.click(h.cancel, [sweep], [message], **private)
    chart.select(h.open_run, None, [opened], **private)
    trials.select(h.open_run, None, [opened], **private)
    use_best.click(h.use_best, [sweep], [use, message], **private)
    report.click(h.report, [sweep], [report_file, message], **private)
    return SweepsTab(opened=opened, use=use, timer=timer)
