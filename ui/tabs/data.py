"""Data tab: upload a table, see its first rows, fix the column mapping, look at labels and lengths;
delete a dataset; see how much disk the data folder uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from backend.errors import ConfigError
from ui import charts, tables
from ui.endpoints import Endpoints
from ui.feedback import done, problem
from ui.tagged import sentence_html

FILE_TYPES = [".csv", ".tsv", ".jsonl", ".json", ".parquet", ".conll", ".iob", ".txt", ".conllu"]
NO_PAIR = "(none)"
DISK_PARTS = (("datasets", "datasets"), ("artifacts", "runs"), ("exports", "exports"), ("cache", "cache"))


@dataclass
class DataTab:
    """What other tabs need: the selected training and evaluation dataset ids (per browser)."""

    selected: gr.State
    eval_selected: gr.State
    datasets: gr.Dropdown


def dataset_choices(endpoints: Endpoints) -> list[tuple[str, int]]:
    """Dropdown choices for registered datasets, newest first."""
    return [(f"{d['name']} · {d['rows']} rows · #{d['id']}", d["id"]) for d in endpoints.datasets()]


def human_bytes(size: int) -> str:
    """1536 -> "1.5 KB" (powers of 1024, as the upload limit is counted)."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


def disk_line(usage: dict[str, int]) -> str:
    """One line: the data folder's total, then its parts."""
    parts = " · ".join(f"{label} {human_bytes(usage.get(key, 0))}" for key, label in DISK_PARTS)
    return f"Disk used by the data folder: **{human_bytes(usage.get('total', 0))}** ({parts})"


def _picker(columns: list[str], value: str, role: dict[str, Any]) -> Any:
    """A column picker as the data's task names its role (the tags column of token data)."""
    return gr.update(choices=columns, value=value, label=role["label"], info=role["help"])


def _stats_line(preview: dict[str, Any]) -> str:
    tokens, chars = preview.get("token_length") or {}, preview.get("char_length") or {}
    labels = preview.get("label_text") or f"{len(preview.get('label_counts') or {})} labels"
    parts = [f"**{preview['rows']} rows**", labels]
    if preview.get("invalid_rows"):
        parts.append(f"{preview['invalid_rows']} rows with a missing cell (dropped for training)")
    if tokens:
        sampled = preview.get("token_lengths_sampled")
        of = f" of a sample of {sampled:,} rows" if sampled else ""
        parts.append(
            f"tokens{of} p50 {tokens['p50']} · p95 {tokens['p95']} · max {tokens['max']} "
            "(choose Max length on the Train tab from these)"
        )
    elif chars:
        parts.append(f"characters p50 {chars['p50']} · max {chars['max']}")
    return " · ".join(parts)


class _Handlers:
    """The tab's event handlers; each returns values for its outputs, never raises."""

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    def upload(self, path: str | None) -> tuple[Any, Any, str, Any, str]:
        """Register the uploaded file; select it. On a DataError: a message, nothing else.

        Either way the upload box is emptied: the uploaded copy is gone (the store has its
        own), and the list shows what was registered.
        """
        if not path:
            return gr.skip(), gr.skip(), "", gr.skip(), gr.skip()
        try:
            ds = self.endpoints.upload_dataset(path)
        except Exception as exc:  # noqa: BLE001 - shown inline; problem() logs real bugs
            return gr.skip(), gr.skip(), problem(exc, "reading the file"), None, gr.skip()
        choices = dataset_choices(self.endpoints)
        message = done(f"Registered **{ds['name']}**: {ds['rows']} rows, columns {', '.join(ds['columns'])}.")
        return gr.update(choices=choices, value=ds["id"]), ds["id"], message, None, self.disk()

    def example(self) -> tuple[Any, Any, str, Any]:
        """Register the example dataset that ships with the app and select it."""
        try:
            ds = self.endpoints.load_example()
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), gr.skip(), problem(exc, "loading the example"), gr.skip()
        message = done(
            f"Loaded the example **{ds['name']}**: {ds['rows']} customer-support messages, each labelled "
            "with the team that answers it. Next: the Train tab."
        )
        return (
            gr.update(choices=dataset_choices(self.endpoints), value=ds["id"]),
            ds["id"],
            message,
            self.disk(),
        )

    def delete(self, dataset_id: int | None) -> tuple[Any, Any, str, str]:
        """Delete the selected dataset and its stored copy; select the newest one left."""
        try:
            if dataset_id is None:
                raise ConfigError("pick a dataset to delete first")
            result = self.endpoints.delete_dataset(int(dataset_id))
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), gr.skip(), problem(exc, "deleting the dataset"), gr.skip()
        choices = dataset_choices(self.endpoints)
        newest = choices[0][1] if choices else None
        file = "its stored file" if result["file_removed"] else "not its file (another dataset uses it)"
        message = done(f"Deleted dataset #{dataset_id} and {file}.")
        return gr.update(choices=choices, value=newest), newest, message, self.disk()

    def disk(self) -> str:
        """The disk-usage line (never raises: it is only information)."""
        try:
            return disk_line(self.endpoints.disk_usage())
        except Exception as exc:  # noqa: BLE001
            return problem(exc, "measuring disk use", toast=False)

    def _task(self, key: str) -> dict[str, Any]:
        return next(t for t in self.endpoints.tasks if t["key"] == key)

    def show(self, dataset_id: int | None) -> tuple[Any, ...]:
        """Preview, mapping dropdowns, stats and charts of one dataset."""
        if dataset_id is None:
            return ("", gr.skip(), gr.skip(), gr.skip(), "", None, None)
        try:
            preview = self.endpoints.api.dataset_preview(int(dataset_id))
        except Exception as exc:  # noqa: BLE001
            return (None, gr.skip(), gr.skip(), gr.skip(), problem(exc, "reading the dataset"), None, None)
        columns, mapping = preview["columns"], preview["mapping"]
        shown = tables.to_html(
            pd.DataFrame(preview["preview"], columns=columns), caption="Preview (first rows)"
        )
        if preview.get("tagged"):  # token data: the sentences with their tags drawn in
            rows = [[i, sentence_html(item)] for i, item in enumerate(preview["tagged"], start=1)]
            caption = "Preview (first sentences, tags drawn in)"
            shown = tables.to_html(pd.DataFrame(rows, columns=["Row", "Sentence"]), caption=caption)
        # the pickers say what the data's task calls its columns (its roles: tokens and tags...)
        roles = {r["slot"]: r for r in self._task(preview["task"])["roles"]}
        text_role, label_role = roles["text"], roles["label"]
        pair_role = roles.get("text_pair")
        return (
            shown,
            _picker(columns, mapping["text"], text_role),
            gr.update(
                choices=[NO_PAIR, *columns],
                value=mapping["text_pair"] or NO_PAIR,
                label=f"{pair_role['label'] if pair_role else 'Second text column'} (optional)",
                info=pair_role["help"] if pair_role else f"Not used by {preview['task_label'].lower()}.",
            ),
            _picker(columns, mapping["label"], label_role),
            _stats_line(preview),
            charts.label_distribution(preview),
            charts.token_histogram(preview),
        )

    def remap(self, dataset_id: int | None, text: str, pair: str, label: str) -> tuple[Any, Any, str]:
        """Register the selected file again with the chosen column mapping."""
        try:
            if dataset_id is None:
                raise ConfigError("upload or pick a dataset first")
            ds = self.endpoints.dataset(int(dataset_id))
            new = self.endpoints.api.register_dataset(
                ds["path"],
                ds["name"],
                text_column=text,
                label_column=label,
                text_pair_column=None if pair in (NO_PAIR, "", None) else pair,
            )
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), gr.skip(), problem(exc, "applying the column mapping")
        message = done(f"Mapping saved as dataset #{new['id']}: text = {text}, label = {label}.")
        return gr.update(choices=dataset_choices(self.endpoints), value=new["id"]), new["id"], message

    def upload_eval(self, path: str | None, train_id: int | None) -> tuple[Any, str]:
        """Register an evaluation file with the training data's column mapping."""
        if not path:
            return None, ""
        try:
            mapping = self.endpoints.dataset(int(train_id))["mapping"] if train_id else {}
            ds = self.endpoints.upload_dataset(
                path, None, mapping.get("text"), mapping.get("text_pair"), mapping.get("label")
            )
        except Exception as exc:  # noqa: BLE001
            return gr.skip(), problem(exc, "reading the evaluation file")
        return ds["id"], done(
            f"Evaluation data **{ds['name']}** ({ds['rows']} rows) will be used instead of a held-out split."
        )

    def reload(self) -> tuple[Any, str]:
        """On page load: the datasets from the database, newest selected; the disk line."""
        choices = dataset_choices(self.endpoints)
        return gr.update(choices=choices, value=choices[0][1] if choices else None), self.disk()


def _upload_row() -> tuple[gr.File, gr.Dropdown, gr.Button, gr.Button, gr.Markdown]:
    with gr.Row(equal_height=True):
        upload = gr.File(
            label="Upload dataset",
            elem_id="upload-dataset",
            file_types=FILE_TYPES,
            type="filepath",
            height=140,
            scale=2,
        )
        with gr.Column(scale=3):
            with gr.Row(equal_height=True):
                datasets = gr.Dropdown(
                    label="Uploaded datasets",
                    choices=[],
                    interactive=True,
                    info="Every file uploaded so far; pick one to see it.",
                    scale=4,
                )
                delete = gr.Button(
                    "Delete dataset", size="sm", scale=0, min_width=140, elem_id="delete-dataset"
                )
            with gr.Row(equal_height=True):
                example = gr.Button(
                    "Load an example", size="sm", scale=0, min_width=160, elem_id="load-example"
                )
                gr.Markdown("No data at hand? 386 support messages to sort by team (CC0).")
            message = gr.Markdown(elem_id="data-message")
    gr.Markdown(
        "CSV, TSV, JSONL or Parquet with a text column and a label column (and optionally "
        "a second text column for pairs). Columns are detected automatically; fix them below."
    )
    return upload, datasets, delete, example, message


def _charts() -> tuple[gr.BarPlot, gr.BarPlot]:
    # y from 0: the plots otherwise start the axis at the smallest bar, which then vanishes.
    # sort "x": the bars' labels carry their order (``charts.in_order``).
    with gr.Row():
        labels = gr.BarPlot(
            x="label",
            y="rows",
            label="Label distribution",
            x_title=" ",  # the plot's titles stay fixed, the label says it: charts.label_distribution
            y_title="count",
            height=260,
            y_lim=[0, None],
            sort="x",
            elem_id="label-chart",
        )
        tokens = gr.BarPlot(
            x="tokens",
            y="rows",
            title="Token length histogram",
            height=260,
            label="Token length histogram",
            x_title="tokens per row",
            y_lim=[0, None],
            sort="x",
            elem_id="token-histogram",
        )
    return labels, tokens


def build_data_tab(endpoints: Endpoints, demo: gr.Blocks) -> DataTab:
    """Lay out the Data tab and wire its events (call inside its ``ui.nav`` page)."""
    h = _Handlers(endpoints)
    selected, eval_selected = gr.State(None), gr.State(None)
    upload, datasets, delete, example, message = _upload_row()
    with gr.Row(equal_height=True):
        text_col = gr.Dropdown(label="Text column", choices=[])
        pair_col = gr.Dropdown(label="Second text column (optional)", choices=[NO_PAIR])
        label_col = gr.Dropdown(label="Label column", choices=[])
        remap = gr.Button("Apply column mapping", scale=0, min_width=200)
    stats = gr.Markdown(elem_id="data-stats")
    preview = gr.HTML(elem_id="data-preview")
    labels_plot, tokens_plot = _charts()
    with gr.Accordion("Evaluation file (optional)", open=False):
        gr.Markdown("Without one, 10% of the training rows are held out for evaluation.")
        eval_upload = gr.File(label="Evaluation file", file_types=FILE_TYPES, type="filepath", height=110)
        eval_message = gr.Markdown()
    disk = gr.Markdown(elem_id="disk-usage")

    private: dict[str, Any] = {"api_visibility": "private"}
    upload.upload(h.upload, [upload], [datasets, selected, message, upload, disk], **private)
    delete.click(h.delete, [selected], [datasets, selected, message, disk], **private)
    example.click(h.example, None, [datasets, selected, message, disk], **private)
    datasets.change(lambda v: v, [datasets], [selected], **private)
    shown = [preview, text_col, pair_col, label_col, stats, labels_plot, tokens_plot]
    selected.change(h.show, [selected], shown, **private)
    remap.click(h.remap, [selected, text_col, pair_col, label_col], [datasets, selected, message], **private)
    eval_upload.upload(h.upload_eval, [eval_upload, selected], [eval_selected, eval_message], **private)
    eval_upload.clear(lambda: (None, ""), None, [eval_selected, eval_message], **private)
    demo.load(h.reload, None, [datasets, disk], **private)
    return DataTab(selected=selected, eval_selected=eval_selected, datasets=datasets)
