"""``build(api) -> gr.Blocks``: the tabs, the cross-tab wiring and the public API endpoints.

Everything shown is read from the Workbench (the database) when the page loads or a
timer ticks, so a reload or an app restart shows the same state; per-browser choices
(the selected dataset, job, compared runs) live in ``gr.State``. Nothing here starts
processes or touches torch: that is the supervisor's and the workers' business.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from service.api import Workbench
from ui import registry as api_endpoints
from ui.endpoints import Endpoints
from ui.nav import HIDDEN_CSS, Navigation
from ui.tabs.compare import build_compare_tab
from ui.tabs.data import build_data_tab
from ui.tabs.errors import build_errors_tab
from ui.tabs.export import build_export_tab
from ui.tabs.probing import build_probing_tab
from ui.tabs.runs import build_runs_tab
from ui.tabs.sweeps import build_sweeps_tab
from ui.tabs.train import build_train_tab
from ui.tagged import CSS as TAGGED_CSS

TITLE = "Adaptation workbench"
DELETE_CACHE = (3600, 24 * 3600)  # every hour, temporary files older than a day
PAGES = ["Data", "Train", "Runs", "Sweeps", "Probing by layer", "Compare", "Error analysis", "Export"]
INTRO = (
    "Adapt a pretrained language model to your labelled texts: **Data** → **Train** → watch "
    "**Runs** → **Compare** methods → **Export**. Training runs in the background; you can "
    "close this page and come back."
)

# Passed to launch() (Gradio 6 takes app-level CSS there, not in Blocks()).
CSS = (
    """
.wb-confusions { display: flex; flex-wrap: wrap; gap: 1.5rem; }
.wb-confusion-title { font-weight: 600; margin-bottom: 0.3rem; }
.wb-confusion table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
.wb-confusion th, .wb-confusion td { border: 1px solid var(--border-color-primary);
  padding: 0.25rem 0.6rem; text-align: center; }
#trainable-params { font-size: var(--text-lg); }
.wb-caption { font-size: var(--block-label-text-size); color: var(--block-label-text-color);
  margin: 0.25rem 0 0.4rem; }
.wb-table { overflow-x: auto; border: 1px solid var(--border-color-primary);
  border-radius: var(--radius-md); }
.wb-table table { width: 100%; border-collapse: collapse; margin: 0; border: 0; font-size: var(--text-md); }
.wb-table th { text-align: left; font-weight: 600; background: var(--background-fill-secondary); }
.wb-table th, .wb-table td { padding: 0.45rem 0.7rem; border: 0;
  border-bottom: 1px solid var(--border-color-primary); }
.wb-table tr { border: 0; }
.wb-table tbody tr:last-child td { border-bottom: none; }
#runs-table tbody tr[data-key] { cursor: pointer; }
#runs-table tbody tr[data-key]:hover { background: var(--background-fill-secondary); }
.wb-table tbody tr.wb-selected td { background: var(--color-accent-soft); }
td[data-cell] { cursor: pointer; }
td.wb-right { background: rgba(22, 163, 74, 0.12); }
td.wb-wrong { background: rgba(220, 38, 38, 0.14); }
.wb-missed { color: #b91c1c; text-decoration: line-through; }
.wb-extra { color: #b45309; font-style: italic; }
.wb-chosen { color: var(--body-text-color); }
td.wb-selected { outline: 2px solid var(--color-accent); outline-offset: -2px; }
#wb-nav { gap: 0.4rem; flex-wrap: wrap; }
#wb-nav button { flex: 0 1 auto; }
"""
    + HIDDEN_CSS
    + TAGGED_CSS
)


def build(api: Workbench) -> gr.Blocks:
    """The whole app for one Workbench (one data folder and database)."""
    endpoints = Endpoints(api)
    # delete_cache: Gradio sweeps this run's uploads and temporary copies (see ui.server).
    with gr.Blocks(title=TITLE, delete_cache=DELETE_CACHE) as demo:
        # First, so the public names (/launch, /jobs, ...) are taken before any private
        # UI event named after a same-named handler would get them.
        api_endpoints.register(endpoints)
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        nav = Navigation.row(PAGES)
        with nav.page("Data"):
            data = build_data_tab(endpoints, demo)
        with nav.page("Train"):
            train = build_train_tab(endpoints, demo, data.selected, data.eval_selected)
        with nav.page("Runs") as runs_page:
            runs = build_runs_tab(endpoints, demo, runs_page)
        with nav.page("Sweeps") as sweeps_page:
            sweeps = build_sweeps_tab(endpoints, sweeps_page)
        with nav.page("Probing by layer") as probing_page:
            build_probing_tab(endpoints, probing_page)
        with nav.page("Compare") as compare_page:
            build_compare_tab(endpoints, compare_page)
        with nav.page("Error analysis") as errors_page:
            build_errors_tab(endpoints, errors_page)
        with nav.page("Export") as export_page:
            build_export_tab(endpoints, export_page)
        nav.wire(timers={"Runs": runs.timer, "Sweeps": sweeps.timer})
        _wire_across_tabs(train.launched, runs.selected)
        _open_runs_from(sweeps.opened, runs.selected, nav)
        _open_runs_from(sweeps.use, train.use, nav, page="Train")
        _open_runs_from(runs.rerun, train.use, nav, page="Train")
    return demo


def _wire_across_tabs(launched: gr.State, selected_job: gr.State) -> None:
    """A job queued on the Train tab becomes the selected job on the Runs tab."""

    def follow(job_id: Any) -> Any:
        return job_id if job_id is not None else gr.skip()

    launched.change(follow, [launched], [selected_job], api_visibility="private")


def _open_runs_from(opened: gr.State, selected_job: gr.State, nav: Navigation, page: str = "Runs") -> None:
    """A run clicked on the Sweeps page opens on the Runs page (or, for "use these settings",
    its settings on the Train page)."""
    skip = [gr.skip() for _ in nav.outputs]

    def open_run(job_id: Any) -> list[Any]:
        if job_id is None:
            return [gr.skip(), *skip, gr.skip()]
        # Cleared again, so that clicking the same point later opens it again.
        return [job_id, *nav.open(page), None]

    opened.change(open_run, [opened], [selected_job, *nav.outputs, opened], api_visibility="private")
