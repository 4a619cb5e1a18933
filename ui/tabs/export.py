"""Export tab: pick a run, download its adapter zip; for a mergeable method (LoRA) also a
merged model."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import gradio as gr

from backend.errors import ConfigError
from ui import tables
from ui.endpoints import Endpoints
from ui.feedback import done, problem
from ui.nav import Page
from ui.tabs.compare import finished_choices

CONTENTS = (
    "The zip holds the trained weights in their library's standard format (head included), "
    "the tokenizer, `labels.json`, the training config, metrics and a model card "
    "(`README.md`) with a load-and-predict snippet."
)


def describe_zip(path: Path) -> str:
    """What is in an exported zip, for the page."""
    with zipfile.ZipFile(path) as zf:
        names = sorted(i.filename for i in zf.infolist())
    listed = ", ".join(f"`{n}`" for n in names[:14]) + (", …" if len(names) > 14 else "")
    return done(f"**{path.name}** ({tables.size(path.stat().st_size)}): {listed}")


class _Handlers:
    """Event handlers; each returns values for its outputs and shows problems inline."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def pick(self, job_id: int | None, include_samples: bool = False) -> tuple[Any, str, Any, Any]:
        """Build the run's zip so that "Download adapter" serves it."""
        hidden_merge = gr.update(visible=False)
        if not job_id:
            return gr.DownloadButton(value=None, interactive=False), "", hidden_merge, gr.skip()
        try:
            path = Path(self.endpoints.export(int(job_id), include_samples=bool(include_samples)).path)
            method = self.endpoints.job(int(job_id), log_tail=0)["method"]
        except Exception as exc:  # noqa: BLE001
            return (
                gr.DownloadButton(value=None, interactive=False),
                problem(exc, "exporting the run"),
                hidden_merge,
                gr.skip(),
            )
        merged = gr.DownloadButton(value=None, interactive=False)
        return (
            gr.DownloadButton(value=str(path), interactive=True),
            describe_zip(path),
            gr.update(visible=self.mergeable(method)),
            merged,
        )

    def mergeable(self, method: str) -> bool:
        """Whether a run of ``method`` can be folded into its base (the method's fact)."""
        return any(m["key"] == method and m["mergeable"] for m in self.endpoints.methods)

    def merge(self, job_id: int | None) -> tuple[Any, str]:
        """Merge a LoRA run into its base and offer the result."""
        try:
            if not job_id:
                raise ConfigError("pick a run first")
            path = self.endpoints.api.export_merged(int(job_id))
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "merging the model")
        return gr.DownloadButton(value=str(path), interactive=True), describe_zip(path)


def build_export_tab(endpoints: Endpoints, tab: Page) -> None:
    """Lay out the Export tab and wire its events (call inside ``tab``)."""
    h = _Handlers(endpoints)
    gr.Markdown(CONTENTS)
    with gr.Row(equal_height=True):
        run = gr.Dropdown(label="Run to export", choices=[], interactive=True, scale=4)
        refresh = gr.Button("Refresh list", size="sm", scale=1)
    samples = gr.Checkbox(
        value=False,
        label="Include sample predictions",
        info="Adds up to 64 evaluation texts with the run's predictions (to check a reload); "
        "left out by default so that no training or evaluation text leaves with the adapter.",
    )
    download = gr.DownloadButton("Download adapter", variant="primary", interactive=False)
    contents = gr.Markdown()
    with gr.Group(visible=False) as merge_group:
        gr.Markdown(
            "**LoRA:** fold the update into the base weights for a plain `transformers` "
            "model: no peft needed and no extra latency at inference.",
            padding=True,
        )
        with gr.Row():
            merge = gr.Button("Build merged model")
            merged = gr.DownloadButton("Download merged model", interactive=False)
        merged_contents = gr.Markdown(padding=True)

    def reload(current: int | None) -> Any:
        """The finished runs; keeps the chosen one, else picks the most recent (the run a person
        who just trained came to export), so "Download adapter" is ready at once."""
        choices = finished_choices(endpoints)
        ids = [c[1] for c in choices]
        return gr.update(choices=choices, value=current if current in ids else (ids[0] if ids else None))

    private: dict[str, Any] = {"api_visibility": "private"}
    for trigger in (tab.select, refresh.click):
        trigger(reload, [run], [run], **private)
    for trigger in (run.change, samples.change):
        trigger(h.pick, [run, samples], [download, contents, merge_group, merged], **private)
    merge.click(h.merge, [run], [merged, merged_contents], **private)
