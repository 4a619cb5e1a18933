"""The app's public API for scripts: plain, typed functions over the Workbench.

Each method is registered with ``gr.api`` under a fixed name (/upload_dataset,
/launch, /jobs, /job, /cancel, /compare, /export, plus /datasets), so gradio_client
callers get keyword arguments with JSON types and a readable error instead of
component plumbing. The tabs call the same methods, so what a script gets is what
the page shows. Methods raise :class:`WorkbenchError`; :func:`register` turns that
into ``gr.Error`` for API callers, the tabs into an inline message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr
from gradio import FileData

from backend.api import Workbench
from backend.errors import ConfigError, WorkbenchError

QUANT_ALIASES = {"none": "none", "8bit": "8bit", "8-bit": "8bit", "4bit": "4bit", "4-bit": "4bit"}


def public_dataset(dataset: dict[str, Any]) -> dict[str, Any]:
    """A dataset dict for API callers: ``path`` renamed ``stored_file``.

    gradio_client takes any dict with a string "path" for a file to download, and
    the stored copy is not served, so the key must not be called that.
    """
    out = {k: v for k, v in dataset.items() if k != "path"}
    out["stored_file"] = dataset.get("path")
    return out


def str_keys(value: Any) -> Any:
    """``value`` with every dict key a string: JSON (and Gradio's encoder) needs that."""
    if isinstance(value, dict):
        return {str(k): str_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [str_keys(v) for v in value]
    return value


class Endpoints:
    """What the UI and scripts can ask for, in plain JSON types."""

    def __init__(self, api: Workbench) -> None:
        self.api = api
        # The method catalogue is fixed for the life of the process; list it once.
        self.methods: list[dict[str, Any]] = api.list_methods()

    # ------------------------------------------------------------ lookups

    def method(self, label_or_key: str) -> dict[str, Any]:
        """The method whose key or label is ``label_or_key`` (any case)."""
        wanted = (label_or_key or "").strip().lower()
        for m in self.methods:
            if wanted in (m["key"].lower(), m["label"].lower()):
                return m
        names = ", ".join(f"{m['label']} ({m['key']})" for m in self.methods)
        raise ConfigError(f"unknown method '{label_or_key}'; choose one of: {names}")

    def dataset(self, dataset_id: int) -> dict[str, Any]:
        """A registered dataset by id."""
        for ds in self.api.list_datasets():
            if ds["id"] == int(dataset_id):
                return ds
        raise ConfigError(f"no dataset {dataset_id}; upload a file first (Data tab or /upload_dataset)")

    # ------------------------------------------------------------ endpoints

    def upload_dataset(
        self,
        file: FileData,
        name: str | None = None,
        text_column: str | None = None,
        text_pair_column: str | None = None,
        label_column: str | None = None,
    ) -> dict[str, Any]:
        """Register a CSV/TSV/JSONL/Parquet file; columns are auto-detected unless given.

        Returns the dataset: {id, name, rows, columns, mapping, label_counts, stored_file, ...}.
        """
        # gr.api hands over the uploaded copy's path; direct callers may pass a dict or FileData.
        path = file.get("path") if isinstance(file, dict) else getattr(file, "path", file)
        if not path:
            raise ConfigError("no file given; pass handle_file('your.csv')")
        return public_dataset(
            self.api.register_dataset(
                Path(str(path)),
                name or None,
                text_column=text_column or None,
                text_pair_column=text_pair_column or None,
                label_column=label_column or None,
            )
        )

    def datasets(self) -> list[dict[str, Any]]:
        """Every registered dataset, newest first."""
        return [public_dataset(d) for d in self.api.list_datasets()]

    def launch(
        self,
        dataset_id: int,
        method: str,
        method_settings: dict[str, Any] | None = None,
        model: str | None = None,
        epochs: int | str | None = None,
        lr: float | str | None = None,
        batch_size: int | None = None,
        max_length: int | None = None,
        quant: str = "none",
        eval_dataset_id: int | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Queue a training job. ``method`` is a label ("LoRA") or key ("lora");
        ``method_settings`` the method's own settings (e.g. {"rank": 8}); anything
        left out uses the method's default. ``epochs`` and ``lr`` are "auto" when left
        out (sized from the data; picked by a search on the training data); a number wins.
        Returns {id, name, method, status}.
        """
        spec = self.method(method)
        job_id = self.api.submit(
            self._config(
                dataset_id,
                spec["key"],
                method_settings,
                model,
                epochs,
                lr,
                batch_size,
                max_length,
                quant,
                eval_dataset_id,
            ),
            name=(name or "").strip() or None,
        )
        job = self.api.get_job(job_id, log_tail=0)
        return {"id": job_id, "name": job["name"], "method": spec["key"], "status": job["status"]}

    def _config(
        self,
        dataset_id: int,
        method: str,
        method_settings: dict[str, Any] | None,
        model: str | None,
        epochs: int | str | None,
        lr: float | str | None,
        batch_size: int | None,
        max_length: int | None,
        quant: str,
        eval_dataset_id: int | None,
    ) -> dict[str, Any]:
        ds = self.dataset(dataset_id)
        if (quant or "none").lower() not in QUANT_ALIASES:
            raise ConfigError(f"quantization must be none, 8-bit or 4-bit, not '{quant}'")
        cfg: dict[str, Any] = {
            "data": ds["path"],
            "method": method,
            "method_config": dict(method_settings or {}),
            "text_column": ds["mapping"]["text"],
            "text_pair_column": ds["mapping"]["text_pair"],
            "label_column": ds["mapping"]["label"],
            "quant": QUANT_ALIASES[(quant or "none").lower()],
        }
        optional = {
            "model": model or None,
            "epochs": epochs,
            "lr": lr,
            "batch_size": batch_size,
            "max_length": max_length,
        }
        cfg.update({k: v for k, v in optional.items() if v is not None})
        for key in ("batch_size", "max_length"):
            if key in cfg:
                cfg[key] = int(cfg[key])
        if eval_dataset_id:  # 0/None: hold out part of the training data
            cfg["eval_data"] = self.dataset(eval_dataset_id)["path"]
        return cfg

    def jobs(self) -> list[dict[str, Any]]:
        """Every job, newest first: id, name, status, method, knobs, progress, ETA, accuracy..."""
        return self.api.list_jobs()

    def job(self, job_id: int, log_tail: int = 100) -> dict[str, Any]:
        """One job in full: config, metrics, series, log tail, error."""
        return self.api.get_job(int(job_id), log_tail=int(log_tail))

    def cancel(self, job_id: int) -> dict[str, Any]:
        """Cancel a queued job now, or ask a running one to stop; returns the job."""
        return self.api.cancel(int(job_id))

    def compare(self, job_ids: list[int]) -> dict[str, Any]:
        """Side-by-side table, curves, config diff, per-class F1 and confusion of jobs."""
        if not job_ids:
            raise ConfigError("pick at least one run to compare")
        return str_keys(self.api.compare([int(i) for i in job_ids]))

    def export(self, job_id: int) -> FileData:
        """The zip of a succeeded job: adapter files, head, label map, model card."""
        return FileData(path=str(self.api.export(int(job_id))))


def _as_api_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """API callers get the backend's message as a gr.Error (an AppError in gradio_client)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except WorkbenchError as exc:
            raise gr.Error(str(exc), print_exception=False) from None

    return call


PUBLIC = ("upload_dataset", "datasets", "launch", "jobs", "job", "cancel", "compare", "export")


def register(endpoints: Endpoints) -> None:
    """Publish the endpoints (call inside the Blocks context)."""
    for name in PUBLIC:
        # Concurrency: reads are cheap and may run side by side; the Workbench locks
        # what must not (model loading).
        gr.api(_as_api_error(getattr(endpoints, name)), api_name=name, concurrency_limit=None)
