"""The public facade used by the UI, the CLI and tests: ``Workbench(settings)``.

Datasets, the method catalogue, and background jobs recorded in the database. Every
problem a user can fix raises a :class:`WorkbenchError` subclass with a message;
nothing here starts processes (the supervisor does) or imports Gradio.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
import typing
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update

from backend.data.prepare import check_file_size, dataset_stats, prepare
from backend.errors import ConfigError
from backend.settings import Settings
from backend.training.config import TrainConfig, validate
from jobs import datasets, queue, views
from jobs.db import Database
from jobs.schema import CANCELLED, FAILED, QUEUED, RUNNING, SUCCEEDED, Job, Metric
from jobs.supervisor import owner_alive, wake_local_supervisors

FIELD_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}
CACHE_KEY = re.compile(r"[0-9a-f]{32}")  # backend.probing.run.cache_key: never a path


def _field_info(cls: type, f: dataclasses.Field[Any]) -> dict[str, Any]:
    meta = f.metadata
    kind = typing.get_type_hints(cls).get(f.name, str)
    return {
        "name": f.name,
        "label": meta.get("label", f.name),
        "help": meta.get("help", ""),
        "type": FIELD_TYPES.get(kind, "str"),
        "default": f.default,
        "min": meta.get("min"),
        "max": meta.get("max"),
        "step": meta.get("step"),
        "choices": list(meta["choices"]) if meta.get("choices") else None,
    }


def _checkpoint_source(job: Job) -> str | None:
    """The checkpoint a resume of ``job`` starts from: its own, else the one it started from."""
    from backend.training.checkpoint import last_epoch

    if job.method == "probe":
        return None  # probes retrain from cached features in seconds
    candidates = [Path(job.artifact_dir) / "checkpoint"] if job.artifact_dir else []
    if job.resume_checkpoint:
        candidates.append(Path(job.resume_checkpoint))
    return next((str(c) for c in candidates if last_epoch(c) is not None), None)


def feature_cache_keys(summary: dict[str, Any] | None) -> set[str]:
    """The probe feature caches a run's summary names (``backend.probing.run.run_probe``).

    Only well-formed keys: the summary is read back from the database, and a key becomes
    a file name to delete.
    """
    keys = (summary or {}).get("feature_cache_keys") or []
    return {k for k in keys if isinstance(k, str) and CACHE_KEY.fullmatch(k)}


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (0 if absent); links are not followed."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while we walked
                continue
    return total


class Workbench:
    """Everything the app can do, for one data folder and database."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self._predictors: dict[str, Any] = {}
        self._tokenizer: Any = None
        # One lock around everything that may import transformers: its lazy module is
        # not thread-safe on first import, and the UI calls in from several threads.
        self._lock = threading.RLock()

    # ------------------------------------------------------------ datasets

    def register_dataset(
        self,
        path: str | Path,
        name: str | None = None,
        *,
        text_column: str | None = None,
        text_pair_column: str | None = None,
        label_column: str | None = None,
    ) -> dict[str, Any]:
        """Validate a file, store a copy and record it (the same file + mapping: same row).

        Files over ``settings.max_upload_mb`` or ``settings.max_rows`` are a DataError.
        """
        path = Path(path)
        check_file_size(path, self.settings.max_upload_bytes)  # before reading it into memory
        # Validation first: on a DataError nothing is copied or recorded. Rows with a
        # missing cell do not block registration (training can drop them); they are counted.
        prepared = prepare(
            path,
            text_column=text_column,
            text_pair_column=text_pair_column,
            label_column=label_column,
            drop_invalid=True,
            max_rows=self.settings.max_rows,
        )
        return self._store_dataset(path, name, prepared.mapping)

    def _store_dataset(self, path: Path, name: str | None, mapping: Any) -> dict[str, Any]:
        check_file_size(path, self.settings.max_upload_bytes)
        stats = dataset_stats(
            path,
            text_column=mapping.text,
            text_pair_column=mapping.text_pair,
            label_column=mapping.label,
            max_rows=self.settings.max_rows,
        )
        return datasets.register(self.db, self.settings.datasets_dir, path, name, mapping, stats)

    def list_datasets(self) -> list[dict[str, Any]]:
        """Registered datasets, newest first."""
        return datasets.list_all(self.db)

    def delete_dataset(self, dataset_id: int) -> dict[str, Any]:
        """Delete a dataset and its stored copy (kept while another dataset row uses it).

        Refused while a queued or running job uses it. Returns {id, deleted, file_removed}.
        """
        return datasets.remove(self.db, self.settings.datasets_dir, int(dataset_id))

    def disk_usage(self) -> dict[str, int]:
        """Bytes under the data folder: datasets, artifacts, exports, cache and the total."""
        data = self.settings.data_dir
        parts = {
            "datasets": self.settings.datasets_dir,
            "artifacts": self.settings.artifacts_dir,
            "exports": data / "exports",
            "cache": data / "cache",  # probe features and uploads on their way in
        }
        usage = {name: folder_bytes(folder) for name, folder in parts.items()}
        usage["total"] = folder_bytes(data)  # the database and anything else too
        return usage

    def dataset_preview(self, dataset_id: int) -> dict[str, Any]:
        """``dataset_stats`` of a stored dataset, token lengths (of a sample) included."""
        row = datasets.get(self.db, dataset_id)
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        return dataset_stats(
            row.path,
            text_column=row.text_column,
            text_pair_column=row.text_pair_column,
            label_column=row.label_column,
            tokenizer=self._default_tokenizer(),
        )

    def _default_tokenizer(self) -> Any:
        from backend.catalogue import DEFAULT_MODEL, load_tokenizer, model_info

        with self._lock:
            if self._tokenizer is None:
                info = model_info(DEFAULT_MODEL, self.settings.models_cache)
                self._tokenizer = load_tokenizer(info)
            return self._tokenizer

    # ------------------------------------------------------------ catalogue

    def list_models(self) -> list[str]:
        """Base models for the picker: the offline default first, then models_cache/ folders."""
        from backend.catalogue import list_models

        return list_models(self.settings.models_cache)

    def list_methods(self) -> list[dict[str, Any]]:
        """Every method with the form fields its settings need."""
        from backend.methods import registry

        return [
            {
                "key": s.key,
                "label": s.label,
                "description": s.description,
                "library": s.library,
                "default_lr": s.default_lr,
                "default_epochs": s.default_epochs,
                "freezes_base": s.freezes_base,
                "fields": [_field_info(s.config_cls, f) for f in dataclasses.fields(s.config_cls)],
            }
            for s in registry.all_methods()
        ]

    def count_parameters(
        self, model: str, method: str, method_config: dict[str, Any] | None, num_labels: int = 2
    ) -> dict[str, Any]:
        """Exact trainable/total parameters, computed without loading weights."""
        from backend.training.params import count_parameters

        with self._lock:
            counted = count_parameters(
                model,
                method,
                method_config,
                tuple(str(i) for i in range(num_labels)),
                str(self.settings.models_cache),
            )
        return {
            "trainable": counted.trainable,
            "total": counted.total,
            "percent": counted.percent,
            "text": counted.describe(),
        }

    def plan_run(
        self,
        dataset_id: int,
        method: str,
        method_config: dict[str, Any] | None = None,
        *,
        has_eval_file: bool = False,
        **settings: Any,
    ) -> dict[str, Any]:
        """Epochs, optimizer steps and learning-rate candidates a launch would use (before launch)."""
        from backend.training.autotune import describe_plan

        row = datasets.get(self.db, dataset_id)
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        cfg = TrainConfig(data=row.path, method=method, method_config=dict(method_config or {}), **settings)
        validate(cfg)
        return describe_plan(cfg, row.rows - (row.invalid_rows or 0), has_eval_file)

    def device_info(self) -> dict[str, Any]:
        """Where jobs will train: {device, gpus, name}."""
        import torch

        if torch.cuda.is_available():
            return {
                "device": "cuda",
                "gpus": torch.cuda.device_count(),
                "name": torch.cuda.get_device_name(0),
            }
        return {"device": "cpu", "gpus": 0, "name": f"CPU ({os.cpu_count()} cores)"}

    # ------------------------------------------------------------ jobs

    def submit(self, config: TrainConfig | dict[str, Any], *, name: str | None = None) -> int:
        """Validate, store the data files and queue a job; returns its id."""
        cfg = TrainConfig.from_dict(dict(config)) if isinstance(config, dict) else dataclasses.replace(config)
        validate(cfg)
        with self._lock:
            from backend.catalogue import model_info
            from backend.training.config import load_data

            model_info(cfg.model, self.settings.models_cache)  # ModelError now, not in the worker
        for given in (cfg.data, cfg.eval_data):  # before load_data reads it into memory
            if given:
                check_file_size(given, self.settings.max_upload_bytes)
        mapping = load_data(cfg).mapping  # exactly the validation the worker will meet
        train_ds = self._store_dataset(Path(cfg.data), None, mapping)
        eval_ds = self._store_dataset(Path(cfg.eval_data), None, mapping) if cfg.eval_data else None
        cfg = dataclasses.replace(
            cfg,
            data=train_ds["path"],
            eval_data=eval_ds["path"] if eval_ds else None,
            text_column=mapping.text,
            text_pair_column=mapping.text_pair,
            label_column=mapping.label,
        )
        job_name = name or views.default_job_name(cfg.method, cfg.method_config, train_ds["name"])
        return self._queue(
            Job(
                name=job_name,
                status=QUEUED,
                method=cfg.method,
                model=cfg.model,
                quant=cfg.quant,
                config=cfg.to_dict(),
                dataset_id=train_ds["id"],
                eval_dataset_id=eval_ds["id"] if eval_ds else None,
            )
        )

    def _queue(self, job: Job) -> int:
        columns = (c.key for c in Job.__table__.columns)
        fields = {key: value for key in columns if (value := getattr(job, key)) is not None}

        def insert(session: Any) -> int:
            row = Job(**fields)  # a fresh object each attempt: a rolled-back one is spent
            session.add(row)
            session.flush()  # assigns the id the folders are named after
            folder = self.settings.artifacts_dir / f"job-{row.id}"
            row.artifact_dir, row.log_path = str(folder), str(folder / "job.log")
            return int(row.id)

        job_id = self.db.write_for_request(insert, what="queueing the job")
        wake_local_supervisors()  # the app's own supervisor starts it now, not at its next poll
        return job_id

    def _job(self, session: Any, job_id: int) -> Job:
        job = session.get(Job, job_id)
        if job is None:
            raise ConfigError(f"no job {job_id}")
        return job

    def list_jobs(self) -> list[dict[str, Any]]:
        """Every job, newest first, as list rows."""
        with self.db.read() as session:
            jobs = list(session.scalars(select(Job).order_by(Job.id.desc())))
            names = views.dataset_names(session, jobs)
        return [views.job_row(j, names.get(j.dataset_id or -1)) for j in jobs]

    def get_job(self, job_id: int, *, log_tail: int = 100) -> dict[str, Any]:
        """One job in full: row, config, final metrics, metric series and the log's tail."""
        with self.db.read() as session:
            job = self._job(session, job_id)
            names = views.dataset_names(session, [job])
            series = views.series(session, job_id)
        return views.job_detail(job, names.get(job.dataset_id or -1), series, log_tail)

    def supervisor_running(self) -> bool:
        """True if a live supervisor is watching this database's queue."""
        import socket

        host = socket.gethostname()
        return any(owner_alive(row, host) for row in queue.supervisors(self.db).values())

    def cancel(self, job_id: int) -> dict[str, Any]:
        """Queued: cancelled now. Running: asks the worker to stop (within seconds)."""
        queue.request_cancel(self.db, job_id)
        return self.get_job(job_id, log_tail=0)

    def resume(self, job_id: int) -> int:
        """Queue a new job continuing a failed/cancelled one from its last checkpoint.

        Without a checkpoint (it stopped during the first epoch, or it is a probe) the
        new job starts from the beginning; either way the lineage is recorded.
        """
        with self.db.read() as session:
            old = self._job(session, job_id)
        if old.status not in (FAILED, CANCELLED):
            raise ConfigError(f"job {job_id} is {old.status}; only failed or cancelled jobs can be resumed")
        base = old.name.split(" (resumed from #")[0]
        return self._queue(
            Job(
                name=f"{base} (resumed from #{job_id})",
                status=QUEUED,
                method=old.method,
                model=old.model,
                quant=old.quant,
                config=old.config,
                dataset_id=old.dataset_id,
                eval_dataset_id=old.eval_dataset_id,
                resumed_from_id=job_id,
                resume_checkpoint=_checkpoint_source(old),
            )
        )

    def delete(self, job_id: int) -> None:
        """Remove a job's rows and artifact folder (not while it runs)."""
        with self.db.write() as session:
            job = self._job(session, job_id)
            if job.status == RUNNING:
                raise ConfigError(
                    f"job {job_id} is running; cancel it first "
                    f"(python app.py cancel {job_id}), then delete it"
                )
            waiting = session.scalar(
                select(Job.id).where(Job.resumed_from_id == job_id, Job.status.in_((QUEUED, RUNNING)))
            )
            if waiting is not None:
                raise ConfigError(
                    f"job {waiting} resumes from job {job_id}'s checkpoint; cancel job {waiting} first"
                )
            folder, cache_keys = job.artifact_dir, feature_cache_keys(job.summary)
            session.execute(delete(Metric).where(Metric.job_id == job_id))
            session.execute(update(Job).where(Job.resumed_from_id == job_id).values(resumed_from_id=None))
            session.delete(job)
            session.flush()
            if cache_keys:
                others = session.scalars(select(Job.summary).where(Job.method == "probe"))
                cache_keys -= {key for summary in others for key in feature_cache_keys(summary)}
        # Only ever a folder this app named after the job: never a user-chosen path.
        if folder and Path(folder).name == f"job-{job_id}":
            shutil.rmtree(folder, ignore_errors=True)
            with self._lock:
                self._predictors.pop(folder, None)
        for key in cache_keys:  # features no other job's summary names
            (self.settings.feature_cache_dir / f"{key}.safetensors").unlink(missing_ok=True)

    def _finished_job(self, job_id: int) -> Job:
        with self.db.read() as session:
            job = self._job(session, job_id)
        if job.status != SUCCEEDED or not job.artifact_dir:
            raise ConfigError(f"job {job_id} is {job.status}; only succeeded jobs have a trained model")
        return job

    def compare(self, ids: list[int]) -> dict[str, Any]:
        """Table, aligned series, config differences and per-class results of jobs."""
        ids = list(dict.fromkeys(ids))
        with self.db.read() as session:
            jobs = [self._job(session, i) for i in ids]
            series = {j.id: views.series(session, j.id) for j in jobs}
        return {
            "table": [views.compare_row(j) for j in jobs],
            "baselines": views.majority_rows(jobs),
            "series": series,
            "config_diff": views.config_diff({j.id: j.config for j in jobs}),
            "per_class_f1": {j.id: views.per_class_f1(j) for j in jobs},
            "confusion": {j.id: views.confusion(j) for j in jobs},
        }

    def export(self, job_id: int, out: str | Path | None = None, *, include_samples: bool = False) -> Path:
        """Zip a succeeded job's model folder (default: <data>/exports/job-ID.zip).

        The zip names the base model by hub id and holds no server path; evaluation texts
        (sample predictions) go in only with ``include_samples``.
        """
        from backend.artifacts.export import export_zip

        job = self._finished_job(job_id)
        name = f"job-{job_id}-with-samples.zip" if include_samples else f"job-{job_id}.zip"
        target = Path(out) if out else self.settings.data_dir / "exports" / name
        return export_zip(job.artifact_dir or "", target, include_samples=include_samples)

    def export_merged(self, job_id: int) -> Path:
        """Zip a succeeded LoRA job merged into its base (a plain transformers model)."""
        from backend.artifacts.merge import merge_lora

        job = self._finished_job(job_id)
        with self._lock:
            return merge_lora(
                job.artifact_dir or "", self.settings.data_dir / "exports" / f"job-{job_id}-merged.zip"
            )

    def predict(
        self, ids: list[int], texts: list[str], pairs: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Each job's predicted label and probability for every text."""
        if pairs is not None and len(pairs) != len(texts):
            raise ConfigError(f"got {len(texts)} texts but {len(pairs)} second texts; give one per text")
        results = []
        for job_id in dict.fromkeys(ids):
            job = self._finished_job(job_id)
            predictions = self._predictor(job.artifact_dir or "").predict(texts, pairs)
            results.append(
                {
                    "id": job.id,
                    "name": job.name,
                    "predictions": [{"label": label, "probability": prob} for label, prob in predictions],
                }
            )
        return results

    def _predictor(self, artifact_dir: str) -> Any:
        from backend.artifacts.load import Predictor

        with self._lock:  # load each model once, even when the UI asks from two threads
            if artifact_dir not in self._predictors:
                self._predictors[artifact_dir] = Predictor(artifact_dir)
            return self._predictors[artifact_dir]
