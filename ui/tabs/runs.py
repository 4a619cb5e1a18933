"""Runs tab: the job list (refreshed by a timer) and the selected job's curves, log and actions."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from service.formatting import metric_word, with_interval
from ui import charts, tables
from ui.endpoints import Endpoints
from ui.feedback import WARNING, done, problem
from ui.forms import shown
from ui.nav import Page
from ui.pacing import pace
from ui.tabs.runs_plots import detail_plots

REFRESH_SECONDS = 3.0  # while a job is queued or running (ui.pacing slows it down otherwise)
ACTIVE = ("queued", "running")
# A click on a job row selects that job: rows carry their job id (tables.to_html keys).
SELECT_ROW_JS = """
element.addEventListener('click', (event) => {
  const row = event.target.closest('tr[data-key]');
  if (row) trigger('select', {index: Number(row.dataset.key), value: row.dataset.key, selected: true});
});
"""
LOG_LINES = 60
# Detail outputs (by their index in ``_Handlers.tick``'s values) sent at most every N seconds
# while they change: the loss curve and the log move on every tick of a training job.
# (the order of those values: the header, the error line, the plots of ``detail_plots``, the
# log, then the action buttons)
DETAILS = ("header", "error", "loss", "evals", "layers", "search", "search_line", "scatter", "log")
HELD = {DETAILS.index("loss"): 10.0, DETAILS.index("log"): 10.0}
EXTRA_SEEDS = 2  # "Repeat with 2 more seeds": with the run itself, three to pool


@dataclass
class RunsTab:
    """What other tabs need: the job selected in this browser, and the job whose settings
    "Run again" asks the Train tab to take."""

    selected: gr.State
    rerun: gr.State
    timer: gr.Timer


def summary(job: dict[str, Any]) -> str:
    """The header line of the selected job."""
    parts = [f"**{job['status']}**", tables.progress(job)]
    if job.get("total_epochs"):
        unit = "layers probed" if charts.is_sweep(job.get("series") or {}) else "epoch"
        parts.append(f"{unit} {job.get('epoch') or 0}/{job['total_epochs']}")
    if job.get("total_steps"):
        parts.append(f"step {job.get('step') or 0}/{job['total_steps']}")
    if job["status"] == "running" and job.get("eta_seconds") is not None:
        parts.append(f"ETA {tables.duration(job['eta_seconds'])}")
    if job.get("score") is not None:
        parts.append(results_text(job))
    if job.get("device"):
        parts.append(f"device {job['device']}")
    if job.get("resumed_from"):
        parts.append(f"resumed from #{job['resumed_from']}")
    if job.get("rerun_of"):
        parts.append(f"settings from #{job['rerun_of']}")
    speed = tables.throughput_text(job.get("metrics") or {}, job.get("series") or {})
    return f"### #{job['id']} {job['name']}\n{' · '.join(parts)}" + (f"\n\n{speed}" if speed else "")


def results_text(job: dict[str, Any]) -> str:
    """A finished run's task's headline metrics, its primary one first, each with its 95%
    interval where the run has one: "accuracy 0.812 [0.786, 0.838] · macro-F1 ...", "spearman
    0.880 [0.86, 0.90] · pearson 0.871 · rmse 0.612 · mae 0.480"."""
    metrics, primary = job.get("metrics") or {}, job["primary_metric"]
    shown = [f"{metric_word(primary)} {with_interval(job['score'], metrics.get('score_ci'))}"]
    for name in job.get("headline") or ():
        if name != primary and metrics.get(name) is not None:
            value = with_interval(metrics[name], metrics.get(f"{name}_ci"))
            shown.append(f"{metric_word(name)} {value}")
    intervals = sum("[" in part for part in shown)
    return " · ".join(shown) + {0: "", 1: " (95% interval)"}.get(intervals, " (95% intervals)")


def error_text(job: dict[str, Any]) -> str:
    """The job's error, or the "did not learn" flag of a run that succeeded without learning."""
    if job.get("error"):
        return f"{WARNING} **{job['status'].capitalize()}:** {job['error']}"
    if job.get("learning_flag"):
        return f"{WARNING} **Check this run:** {job['learning_flag']}"
    return ""


def search_text(job: dict[str, Any]) -> str:
    """What the learning-rate search chose, and what it cost."""
    search, metrics = job.get("lr_search"), job.get("metrics") or {}
    if not search:
        return ""
    share = metrics.get("lr_search_share")
    cost = f" ({search['seconds']:.1f} s, {share:.0%} of the rest of the run)" if share is not None else ""
    return (
        f"**Learning rate {search['chosen']:g}** chosen by the automatic search{cost}: "
        f"{len(search['candidates'])} candidates trained on {search['train_rows']} training rows in "
        f"rounds of {search['round_steps']} steps, judged by the loss on {search['holdout_rows']} "
        "held-out training rows (the evaluation set is not used)."
        + (
            " No candidate moved that loss within the search's budget, so the method's default "
            "(the candidate nearest it) was taken."
            if search.get("inconclusive")
            else ""
        )
        + tie_text(search)
        + (f"\n\n{WARNING} {metrics['lr_choice_warning']}" if metrics.get("lr_choice_warning") else "")
    )


def tie_text(search: dict[str, Any]) -> str:
    """Why the default won over a rate with a lower held-out loss (the search's tie rule)."""
    tie = charts.chosen_tie(search)
    if not tie:
        return ""
    best, gap, se = tie
    return (
        f" {best:g} scored a slightly lower loss, but by {gap:.3f} ± {se:.3f} per row, within the "
        "noise; the method's default was kept, because a short search can favour a rate that then "
        "fails over the full run."
    )


def actions(status: str | None) -> tuple[Any, Any, Any]:
    """Cancel, Resume, Delete: enabled only where they make sense for ``status``."""
    return (
        gr.update(interactive=status in ("queued", "running")),
        gr.update(interactive=status in ("failed", "cancelled")),
        gr.update(interactive=status is not None and status != "running"),
    )


PICK_A_JOB = "Click a job in the table to see its curves, log and actions."


def unchanged_skipped(
    values: tuple[Any, ...],
    before: list[str] | None,
    held: dict[int, float] | None = None,
    sent_at: dict[str, float] | None = None,
    now: float = 0.0,
) -> tuple[list[Any], list[str], dict[str, float]]:
    """``values`` with each one equal to what was sent last time (``before``: their
    fingerprints) replaced by ``gr.skip()``; and those at an index of ``held`` (index: seconds)
    sent at most once per that many seconds (``sent_at``: when each index last went out). Returns
    the values, the fingerprints of what the page now shows, and the new ``sent_at``.

    While a job trains, its step moves on every tick, but its evaluation curve changes once an
    epoch, its search chart and buttons not at all: sending each only when it changed keeps the
    page from redrawing them on every tick. The loss curve and the log do change on every tick;
    with the curve redrawn every 2 s the page cost 14% of a core (bench/UI.md), so they are held
    back a few seconds, while the header's step and ETA stay live.
    """
    prints = [fingerprint(value) for value in values]
    times = dict(sent_at or {})
    if before is None or len(before) != len(values):
        return list(values), prints, {str(i): now for i in (held or {})}
    out, shown = [], []
    for i, (value, new, old) in enumerate(zip(values, prints, before, strict=True)):
        wait = (held or {}).get(i)
        if new == old or (wait is not None and now - times.get(str(i), -wait) < wait):
            out.append(gr.skip())
            shown.append(old)  # the page keeps the old one: send the new one later
        else:
            out.append(value)
            shown.append(new)
            if wait is not None:
                times[str(i)] = now
    return out, shown, times


def fingerprint(value: Any) -> str:
    """A digest of an output value (text, a ``gr.update`` dict, a plot's DataFrame)."""

    def plain(obj: Any) -> Any:
        if isinstance(obj, pd.DataFrame):
            return obj.to_dict("split")
        return repr(obj)

    text = json.dumps(value, default=plain, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def nothing_selected(text: str) -> tuple[Any, ...]:
    """Detail outputs when no job is shown: a hint, empty curves and log, no actions."""
    return (
        text,
        "",
        gr.update(value=None, visible=True),
        *evaluation(None, sweep=False),
        *search_chart(None),
        "",
        "",
        *actions(None),
        None,
    )


def search_chart(job: dict[str, Any] | None) -> tuple[Any, Any]:
    """The learning-rate search's chart and line, shown only for runs that searched."""
    search = (job or {}).get("lr_search")
    if not search:
        return gr.update(visible=shown(False)), ""
    return gr.update(value=charts.lr_search(search), visible=True), search_text(job or {})


def loss_plot(series: dict[str, Any]) -> Any:
    """The training-loss chart, hidden for a probe layer sweep that has no loss by step
    (show only what exists; an ordinary run shows it from the start, filling as it trains)."""
    empty_sweep = charts.is_sweep(series) and not series.get("train_loss")
    return gr.update(value=charts.loss_curve(series), visible=shown(not empty_sweep))


def evaluation(frame: Any, *, sweep: bool) -> tuple[Any, Any]:
    """Values for the per-epoch and the per-layer plot: one shown, the other hidden.

    Two plots rather than one retitled plot: a Gradio plot whose title changes in the
    same update as its data redraws with the previous data.
    """
    if sweep:
        return gr.update(visible=shown(False)), gr.update(value=frame, visible=True)
    return gr.update(value=frame, visible=True), gr.update(visible=shown(False))


class _Handlers:
    """Event handlers; each returns values for its outputs and shows problems inline."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints
        self.scatters: dict[int, str] = {}  # job id -> its finished scatter (read once)

    def scatter(self, job: dict[str, Any]) -> str:
        """A succeeded run's predicted-against-true plot when its score is a number (not
        accuracy): read from its stored predictions once, then kept."""
        if job["status"] != "succeeded" or job.get("accuracy") is not None or job.get("score") is None:
            return ""
        if job["id"] not in self.scatters:
            try:
                self.scatters[job["id"]] = self.endpoints.api.prediction_scatter(job["id"])
            except Exception as exc:  # noqa: BLE001 - a run from before predictions were kept
                return problem(exc, "reading the predictions", toast=False)
        return self.scatters[job["id"]]

    def tick(self, selected: int | None, last: dict[str, Any] | None) -> tuple[Any, ...]:
        """Refresh the table and, when a job is selected, its details.

        Only what changed since the last tick is sent (``last`` holds the table's text and a
        fingerprint of each detail sent, ``unchanged_skipped``): every value sent makes each open
        page redraw, and redrawing unchanged plots every 2 s cost a page a third of a CPU core.
        """
        previous = last or {}
        jobs = self.endpoints.jobs()
        interval, seconds = pace(
            any(j["status"] in ACTIVE for j in jobs), REFRESH_SECONDS, previous.get("pace")
        )
        html = tables.to_html(
            tables.runs_table(jobs),
            keys=[j["id"] for j in jobs],
            selected=selected,
            empty="No jobs yet: launch one on the Train tab.",
        )
        table = gr.skip() if previous.get("table") == html else html
        if selected is None:
            return (*self._nothing(table, html, previous, PICK_A_JOB, seconds), interval)
        try:
            job = self.endpoints.job(int(selected), log_tail=LOG_LINES)
        except Exception:  # noqa: BLE001 - deleted in another browser: forget it
            gone = "The selected job no longer exists."
            return (*self._nothing(table, html, previous, gone, seconds), interval)
        values = (
            summary(job),
            error_text(job),
            loss_plot(job["series"]),
            *evaluation(charts.epoch_curves(job["series"]), sweep=charts.is_sweep(job["series"])),
            *search_chart(job),
            self.scatter(job),
            "\n".join(job["log"]),
            *actions(job["status"]),
        )
        sent, prints, sent_at = unchanged_skipped(
            values,
            previous.get("details"),
            HELD if job["status"] == "running" else None,  # a finished job's last curve: at once
            previous.get("sent_at"),
            time.monotonic(),
        )
        state = {"table": html, "job": job["id"], "details": prints, "sent_at": sent_at, "pace": seconds}
        return (table, *sent, state, interval)

    @staticmethod
    def _nothing(
        table: Any, html: str, previous: dict[str, Any], hint: str, seconds: float
    ) -> tuple[Any, ...]:
        """No job shown: the empty details once, then nothing until that changes."""
        details = nothing_selected(hint)[:-1]
        if previous.get("job") == hint:
            details = (gr.skip(),) * len(details)
        return (table, *details, {"table": html, "job": hint, "details": None, "pace": seconds})

    def select(self, evt: gr.SelectData) -> Any:
        """The job id of the clicked table row (see SELECT_ROW_JS)."""
        return int(evt.index) if evt.index is not None else gr.skip()

    def cancel(self, selected: int | None) -> str:
        try:
            job = self.endpoints.cancel(int(selected)) if selected else None
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "cancelling the job")
        if job is None:
            return f"{WARNING} Select a job first."
        return done(
            f"Job #{job['id']} is {job['status']}"
            + (" (stopping within seconds)." if job["status"] == "running" else ".")
        )

    def resume(self, selected: int | None) -> tuple[str, Any]:
        try:
            new_id = self.endpoints.api.resume(int(selected)) if selected else None
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "resuming the job"), gr.skip()
        if new_id is None:
            return f"{WARNING} Select a job first.", gr.skip()
        return done(f"Queued job #{new_id}, resuming #{selected} from its last checkpoint."), new_id

    def delete(self, selected: int | None) -> tuple[str, Any]:
        try:
            if selected:
                self.endpoints.api.delete(int(selected))
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "deleting the job"), gr.skip()
        if not selected:
            return f"{WARNING} Select a job first.", gr.skip()
        return done(f"Deleted job #{selected} and its files."), None

    def more_seeds(self, selected: int | None) -> tuple[str, Any]:
        """Two more runs of the shown job's settings with unused seeds (Compare pools them)."""
        try:
            new_ids = self.endpoints.api.repeat_with_seeds(int(selected), EXTRA_SEEDS) if selected else None
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "queueing more seeds"), gr.skip()
        if not new_ids:
            return f"{WARNING} Select a job first.", gr.skip()
        queued = ", ".join(f"#{i}" for i in new_ids)
        text = f"Queued {queued}: #{selected}'s settings with other seeds. Compare pools them."
        return done(text), gr.skip()


def _action_buttons() -> tuple[gr.Button, gr.Button, gr.Button, gr.Button, gr.Button]:
    """Cancel, Resume, Delete: disabled until a job whose status allows them is shown; Run
    again (any job: its settings fill the Train tab); more seeds (any job)."""
    with gr.Row():
        return (
            gr.Button("Cancel", variant="stop", size="sm", interactive=False),
            gr.Button("Resume", size="sm", interactive=False),
            gr.Button("Delete", size="sm", interactive=False),
            gr.Button("Run again…", size="sm", elem_id="run-again"),
            gr.Button(f"Repeat with {EXTRA_SEEDS} more seeds", size="sm", elem_id="more-seeds"),
        )


def build_runs_tab(endpoints: Endpoints, demo: gr.Blocks, tab: Page) -> RunsTab:
    """Lay out the Runs tab and wire its events (call inside ``tab``). Its timer starts stopped:
    it ticks only while the page is shown (``ui.nav.Navigation.wire``)."""
    h = _Handlers(endpoints)
    selected, last = gr.State(None), gr.State(None)
    table = gr.HTML(label="Jobs", elem_id="runs-table", js_on_load=SELECT_ROW_JS)
    header = gr.Markdown(elem_id="run-summary")
    cancel, resume, delete, again, seeds = _action_buttons()
    action = gr.Markdown()
    error = gr.Markdown(elem_id="run-error")
    plots = detail_plots()
    log = gr.Textbox(label="Log (last lines)", lines=10, max_lines=10, autoscroll=True, interactive=False)

    private: dict[str, Any] = {"api_visibility": "private"}
    timer = gr.Timer(REFRESH_SECONDS, active=False)
    outputs = [table, header, error, *plots, log, cancel, resume, delete, last, timer]
    quiet: dict[str, Any] = {"show_progress": "hidden", **private}  # no spinner on every tick
    timer.tick(h.tick, [selected, last], outputs, **quiet)
    for trigger in (demo.load, tab.select):  # shown at once, not at the next tick
        trigger(h.tick, [selected, last], outputs, **quiet)
    table.select(h.select, None, [selected], **private)
    # A new selection sends every detail, whatever was sent before.
    selected.change(lambda s: h.tick(s, None), [selected], outputs, **quiet)
    cancel.click(h.cancel, [selected], [action], **private)
    resume.click(h.resume, [selected], [action, selected], **private)
    delete.click(h.delete, [selected], [action, selected], **private)
    seeds.click(h.more_seeds, [selected], [action, selected], **private)
    rerun = gr.State(None)
    again.click(lambda job_id: job_id if job_id else gr.skip(), [selected], [rerun], **private)
    return RunsTab(selected=selected, rerun=rerun, timer=timer)
