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
from ui.pacing import timers_follow_tabs
from ui.tabs.compare import build_compare_tab
from ui.tabs.data import build_data_tab
from ui.tabs.errors import build_errors_tab
from ui.tabs.export import build_export_tab
from ui.tabs.probing import build_probing_tab
from ui.tabs.runs import build_runs_tab
from ui.tabs.sweeps import build_sweeps_tab
from ui.tabs.train import build_train_tab

TITLE = "Adaptation workbench"
DELETE_CACHE = (3600, 24 * 3600)  # every hour, temporary files older than a day
INTRO = (
    "Adapt a pretrained language model to your labelled texts: **Data** → **Train** → watch "
    "**Runs** → **Compare** methods → **Export**. Training runs in the background; you can "
    "close this page and come back."
)

# Passed to launch() (Gradio 6 takes app-level CSS there, not in Blocks()).
CSS = """
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
td.wb-selected { outline: 2px solid var(--color-accent); outline-offset: -2px; }
"""


def build(api: Workbench) -> gr.Blocks:
    """The whole app for one Workbench (one data folder and database)."""
    endpoints = Endpoints(api)
    # delete_cache: Gradio sweeps this run's uploads and temporary copies (see ui.server).
    with gr.Blocks(title=TITLE, delete_cache=DELETE_CACHE) as demo:
        # First, so the public names (/launch, /jobs, ...) are taken before any private
        # UI event named after a same-named handler would get them.
        api_endpoints.register(endpoints)
        gr.Markdown(f"# {TITLE}\n{INTRO}")
        with gr.Tabs() as tabs:
            with gr.Tab("Data") as data_tab:
                data = build_data_tab(endpoints, demo)
            with gr.Tab("Train", id="train") as train_tab:
                train = build_train_tab(endpoints, demo, data.selected, data.eval_selected)
            with gr.Tab("Runs", id="runs") as runs_tab:
                runs = build_runs_tab(endpoints, demo, runs_tab)
            with gr.Tab("Sweeps") as sweeps_tab:
                sweeps = build_sweeps_tab(endpoints, sweeps_tab)
            with gr.Tab("Probing by layer") as probing_tab:
                build_probing_tab(endpoints, probing_tab)
            with gr.Tab("Compare") as compare_tab:
                build_compare_tab(endpoints, compare_tab)
            with gr.Tab("Error analysis") as errors_tab:
                build_errors_tab(endpoints, errors_tab)
            with gr.Tab("Export") as export_tab:
                build_export_tab(endpoints, export_tab)
        shown_alone = [data_tab, train_tab, probing_tab, compare_tab, errors_tab, export_tab]
        timers_follow_tabs(
            [(runs_tab, runs.timer), (sweeps_tab, sweeps.timer), *((t, None) for t in shown_alone)]
        )
        _wire_across_tabs(train.launched, runs.selected)
        _open_runs_from(sweeps.opened, runs.selected, tabs)
        _open_runs_from(sweeps.use, train.use, tabs, tab="train")
        _open_runs_from(runs.rerun, train.use, tabs, tab="train")
    return demo


def _wire_across_tabs(launched: gr.State, selected_job: gr.State) -> None:
    """A job queued on the Train tab becomes the selected job on the Runs tab."""

    def follow(job_id: Any) -> Any:
        return job_id if job_id is not None else gr.skip()

    launched.change(follow, [launched], [selected_job], api_visibility="private")


def _open_runs_from(opened: gr.State, selected_job: gr.State, tabs: gr.Tabs, tab: str = "runs") -> None:
    """A run clicked on the Sweeps tab opens on the Runs tab (or, for "use these settings",
    its settings on the Train tab)."""

    def open_run(job_id: Any) -> tuple[Any, Any, Any]:
        if job_id is None:
            return gr.skip(), gr.skip(), gr.skip()
        # Cleared again, so that clicking the same point later opens it again.
        return job_id, gr.Tabs(selected=tab), None

    opened.change(open_run, [opened], [selected_job, tabs, opened], api_visibility="private")
