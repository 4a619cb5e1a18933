"""The app's public API for scripts: plain, typed functions over the Workbench.

Each method is registered with ``gr.api`` under a fixed name (/upload_dataset, /launch,
/jobs, /job, /cancel, /compare, /export, /report, plus /datasets and /delete_dataset), so
gradio_client callers get keyword arguments with JSON types and a readable error instead
of component plumbing; results are the records of ``service.records`` (plain dicts). The
tabs call the same methods, so what a script gets is what the page shows. Methods raise
:class:`WorkbenchError`; :func:`register` turns that into ``gr.Error`` for API callers,
the tabs into an inline message.

Whoever reaches the port reaches every endpoint, so: files come only through Gradio's
upload (never a server path; see ui.uploads), base models only from the catalogue or the
hub (unless --allow-local-models), and callers from other machines get results without
tracebacks, pids or server paths (unless --admin-details; see ui.callers, ui.exposure).
"""

from __future__ import annotations

from typing import Any, TypeVar

import gradio as gr
from gradio import FileData

from backend.errors import ConfigError
from service.access import check_model_name
from service.api import Workbench
from service.records import (
    CompareResult,
    DatasetInfo,
    DatasetRemoval,
    DiskUsage,
    JobDetail,
    JobRow,
    MethodInfo,
    ModelFacts,
    PublicDataset,
    RunSummary,
    TaskInfo,
)
from ui.analysis_endpoints import AnalysisEndpoints
from ui.callers import as_id, caller_is_local, str_keys
from ui.exposure import redact
from ui.report_endpoints import ReportEndpoints
from ui.sweep_endpoints import SweepEndpoints
from ui.uploads import discard_upload, public_dataset, uploaded_file

T = TypeVar("T")

QUANT_ALIASES = {"none": "none", "8bit": "8bit", "8-bit": "8bit", "4bit": "4bit", "4-bit": "4bit"}


class Endpoints(SweepEndpoints, AnalysisEndpoints, ReportEndpoints):
    """What the UI and scripts can ask for, in plain JSON types."""

    def __init__(self, api: Workbench) -> None:
        self.api = api
        # The method catalogue is fixed for the life of the process; list it once.
        self.methods: list[MethodInfo] = api.list_methods()
        self.tasks: list[TaskInfo] = api.list_tasks()  # tasks and their own settings, as fixed

    def shown(self, value: T, request: gr.Request | None = None) -> T:
        """``value`` whole for a caller on this machine (or with --admin-details), else redacted
        (ui.exposure: then a record lacks the server-only keys, such as ``log_path``)."""
        if self.api.settings.admin_details or caller_is_local(request):
            return value
        return redact(value)

    # ------------------------------------------------------------ lookups

    def method(self, label_or_key: str) -> MethodInfo:
        """The method whose key or label is ``label_or_key`` (any case)."""
        wanted = (label_or_key or "").strip().lower()
        for m in self.methods:
            if wanted in (m["key"].lower(), m["label"].lower()):
                return m
        names = ", ".join(f"{m['label']} ({m['key']})" for m in self.methods)
        raise ConfigError(f"unknown method '{label_or_key}'; choose one of: {names}")

    def dataset(self, dataset_id: int) -> DatasetInfo:
        """A registered dataset by id."""
        for ds in self.api.list_datasets():
            if ds["id"] == int(dataset_id):
                return ds
        raise ConfigError(f"no dataset {dataset_id}; upload a file first (Data tab or /upload_dataset)")

    # ------------------------------------------------------------ endpoints

    def model_facts(
        self,
        model: str | None = None,
        method: str | None = None,
        method_settings: dict[str, Any] | None = None,
        batch_size: int | None = None,
        max_length: int | None = None,
        num_labels: int = 2,
        gradient_checkpointing: str | None = None,
        request: gr.Request | None = None,
    ) -> ModelFacts:
        """What the Train tab says about a base model (None: the default): its size, encoder or
        decoder, the memory a run of ``method`` (label or key; None: the default) would need
        with the base in fp32, 8-bit and 4-bit, and whether that fits this machine. A hub id
        is looked up on the hub; offline the error says it needs internet.
        ``gradient_checkpointing``: "auto" (None), "on" or "off", as for ``/launch``.
        Returns {model, hub_id, architecture, total_params, memory_mb, fits, text, ...}."""
        key = self.method(method)["key"] if method else next(m["key"] for m in self.methods if m["default"])
        check_model_name(model, self.api.list_models(), allow_local=self.api.settings.allow_local_models)
        # Left out: the service's defaults (the common settings' own defaults).
        shape = {k: int(v) for k, v in (("batch_size", batch_size), ("max_length", max_length)) if v}
        facts = self.api.model_facts(
            model or None, key, dict(method_settings or {}), num_labels=max(2, int(num_labels)),
            gradient_checkpointing=gradient_checkpointing or "auto", **shape,
        )  # fmt: skip
        return self.shown(facts, request)

    def load_example(self, request: gr.Request | None = None) -> PublicDataset:
        """Register the example dataset that ships with the app: 386 customer-support messages
        labelled with the team that answers them (billing, delivery, technical, account; CC0).
        Loading it again returns the same dataset."""
        return self.shown(public_dataset(self.api.load_example()), request)

    def upload_dataset(
        self,
        file: FileData,
        name: str | None = None,
        text_column: str | None = None,
        text_pair_column: str | None = None,
        label_column: str | None = None,
        request: gr.Request | None = None,
    ) -> PublicDataset:
        """Register an uploaded CSV/TSV/JSONL/Parquet file (gradio_client: ``handle_file(path)``);
        columns are auto-detected unless given. Paths on the server are refused.

        The name defaults to the file's name without its extension. Returns the dataset:
        {id, name, rows, columns, mapping, label_counts, stored_file, ...}.
        """
        # gr.api hands over the uploaded copy's path; the Data tab its gr.File's path.
        path = uploaded_file(file)
        try:
            dataset = self.api.register_dataset(
                path,
                # Gradio keeps the original name inside a folder named by a hash; the default
                # name would prefix that hash to a generic stem like "train".
                name or path.stem,
                text_column=text_column or None,
                text_pair_column=text_pair_column or None,
                label_column=label_column or None,
            )
        finally:
            discard_upload(path)
        return self.shown(public_dataset(dataset), request)

    def delete_dataset(self, dataset_id: int, request: gr.Request | None = None) -> DatasetRemoval:
        """Delete a dataset and its stored copy; refused while a queued or running job uses it.
        Finished jobs keep their results. Returns {id, deleted, file_removed}."""
        return self.shown(self.api.delete_dataset(as_id(dataset_id, "dataset_id")), request)

    def disk_usage(self) -> DiskUsage:
        """Bytes the data folder uses: datasets, artifacts, exports, cache and total."""
        return self.api.disk_usage()

    def datasets(self, request: gr.Request | None = None) -> list[PublicDataset]:
        """Every registered dataset, newest first."""
        return self.shown([public_dataset(d) for d in self.api.list_datasets()], request)

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
        precision: str | None = None,
        group_by_length: bool | None = None,
        gradient_checkpointing: str | None = None,
        rerun_of: int | None = None,
        task: str | None = None,
        task_settings: dict[str, dict[str, Any]] | None = None,
    ) -> RunSummary:
        """Queue a training job. ``method`` is a label ("LoRA") or key ("lora");
        ``method_settings`` the method's own settings (e.g. {"rank": 8}); anything
        left out uses the method's default. ``epochs`` and ``lr`` are "auto" when left
        out (sized from the data; picked by a search on the training data); a number wins.
        ``rerun_of``: the job whose settings these are (recorded as the new job's lineage).
        ``task``: what the model outputs ("auto", the default: from the label column; or a task
        key, e.g. "regression" for a column of numbers). ``task_settings``: tasks' own settings by
        task key ({task: {setting: value}}: ``Workbench.list_tasks`` describes them); the run takes those
        of its task (with "auto", the one its data is). Returns {id, name, method, status}.
        """
        spec = self.method(method)
        settings = self.api.settings
        check_model_name(model, self.api.list_models(), allow_local=settings.allow_local_models)
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
                {
                    "precision": precision,
                    "group_by_length": group_by_length,
                    "gradient_checkpointing": gradient_checkpointing,
                    "task": task or None,
                    "task_config": self._task_config(dataset_id, task, task_settings),
                },
            ),
            name=(name or "").strip() or None,
            rerun_of=as_id(rerun_of, "rerun_of") if rerun_of is not None else None,
        )
        job = self.api.get_job(job_id, log_tail=0)
        return {"id": job_id, "name": job["name"], "method": spec["key"], "status": job["status"]}

    def _task_config(
        self, dataset_id: int, task: str | None, task_settings: dict[str, dict[str, Any]] | None
    ) -> dict[str, Any] | None:
        """The settings of the run's task out of ``task_settings`` (None: the task's defaults)."""
        if not task_settings:
            return None
        if not isinstance(task_settings, dict) or not all(
            isinstance(v, dict) for v in task_settings.values()
        ):
            raise ConfigError(
                "task_settings must map each task key to its settings: {task: {setting: value}}"
            )
        named = (
            task if task not in (None, "", "auto") else self.api.dataset_task(as_id(dataset_id, "dataset_id"))
        )
        return dict(task_settings.get(str(named)) or {}) or None

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
        extra: dict[str, Any] | None = None,
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
            **(extra or {}),
        }
        cfg.update({k: v for k, v in optional.items() if v is not None})
        for key in ("batch_size", "max_length"):
            if key in cfg:
                cfg[key] = int(cfg[key])
        if eval_dataset_id:  # 0/None: hold out part of the training data
            cfg["eval_data"] = self.dataset(eval_dataset_id)["path"]
        return cfg

    def jobs(self, request: gr.Request | None = None) -> list[JobRow]:
        """Every job, newest first: id, name, status, method, knobs, progress, ETA, accuracy..."""
        return self.shown(self.api.list_jobs(), request)

    def job(self, job_id: int, log_tail: int = 100, request: gr.Request | None = None) -> JobDetail:
        """One job in full: config, metrics, series, log tail, error. Callers from other
        machines get no traceback, pid, host or server path (file names only)."""
        return self.shown(self.api.get_job(int(job_id), log_tail=int(log_tail)), request)

    def cancel(self, job_id: int, request: gr.Request | None = None) -> JobDetail:
        """Cancel a queued job now, or ask a running one to stop; returns the job."""
        return self.shown(self.api.cancel(int(job_id)), request)

    def compare(self, job_ids: list[int], request: gr.Request | None = None) -> CompareResult:
        """Side-by-side table, curves, config diff, per-class F1 and confusion of jobs (the
        dicts keyed by job id have string keys, as JSON has)."""
        if not job_ids:
            raise ConfigError("pick at least one run to compare")
        return self.shown(str_keys(self.api.compare([int(i) for i in job_ids])), request)

    def export(self, job_id: int, include_samples: bool = False) -> FileData:
        """The zip of a succeeded job: adapter files, head, label map, model card. It names the
        base model by hub id and holds no server path; ``include_samples`` adds up to 64
        evaluation texts with their predictions (left out by default)."""
        return FileData(path=str(self.api.export(int(job_id), include_samples=bool(include_samples))))
