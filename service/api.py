"""The public facade used by the UI, the CLI and tests: ``Workbench(settings)``.

Datasets, the method catalogue, and background jobs recorded in the database. Every
problem a user can fix raises a :class:`WorkbenchError` subclass with a message;
nothing here starts processes (the supervisor does) or imports Gradio.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import shutil
import time
from pathlib import Path
from typing import Any

from sqlalchemy import delete, select, update

from backend.data.limits import check_file_size
from backend.errors import ConfigError
from backend.methods import registry
from backend.settings import host_name
from backend.training.config import TrainConfig, validate
from jobs import queue, views
from jobs.schema import CANCELLED, FAILED, QUEUED, RUNNING, Job, Metric
from jobs.supervisor_registry import owner_alive, supervisors, wake_local_supervisors
from service.api_analysis import AnalysisApi
from service.api_artifacts import ArtifactsApi
from service.api_catalogue import CatalogueApi
from service.api_datasets import DatasetsApi
from service.api_forecast import ForecastApi
from service.api_report import ReportApi
from service.api_sweeps import SweepsApi
from service.records import (
    JobDetail,
    JobRow,
)

MAX_EXTRA_SEEDS = 10  # one "repeat with more seeds" asks for at most this many runs
CACHE_KEY = re.compile(r"[0-9a-f]{32}")  # backend.probing.run.cache_key: never a path


def _checkpoint_source(job: Job) -> str | None:
    """The checkpoint a resume of ``job`` starts from: its own, else the one it started from."""
    from backend.training.checkpoint import last_epoch  # deferred: torch, for start-up

    if not registry.get(job.method).resumable:
        return None  # e.g. probes: they retrain from cached features in seconds
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


class Workbench(DatasetsApi, CatalogueApi, ArtifactsApi, SweepsApi, AnalysisApi, ReportApi, ForecastApi):
    """Everything the app can do, for one data folder and database.

    Datasets (``api_datasets``), the catalogue (``api_catalogue``), trained models
    (``api_artifacts``) and shareable reports (``api_report``) are its parts; the jobs live here.
    """

    # ------------------------------------------------------------ jobs

    def submit(
        self, config: TrainConfig | dict[str, Any], *, name: str | None = None, rerun_of: int | None = None
    ) -> int:
        """Validate, store the data files and queue a job; returns its id. ``rerun_of``: the
        job whose settings this one was launched from (its lineage)."""
        if rerun_of is not None:
            with self.db.read() as session:
                self._job(session, int(rerun_of))  # "no job N" now, not a dangling link
        cfg, train_ds, eval_ds = self._prepare(config)
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
                rerun_of_id=rerun_of,
            )
        )

    def repeat_with_seeds(self, job_id: int, count: int = 2) -> list[int]:
        """Queue ``count`` more runs of a job's settings, each with a seed that no run of the
        same settings has used yet (the smallest free ones); returns their job ids. Compare
        then pools the runs that differ only in seed."""
        if not 1 <= int(count) <= MAX_EXTRA_SEEDS:
            raise ConfigError(f"more seeds: ask for 1 to {MAX_EXTRA_SEEDS}, not {count}")
        with self.db.read() as session:
            job = self._job(session, int(job_id))
            key = views.seed_key(job)
            same = session.scalars(select(Job).where(Job.method == job.method)).all()
            used = {(j.config or {}).get("seed") for j in same if views.seed_key(j) == key}
            config = dict(job.config or {})
        free = [seed for seed in range(len(used) + int(count) + 1) if seed not in used][: int(count)]
        return [self.submit({**config, "seed": seed}, rerun_of=int(job_id)) for seed in free]

    def _prepare(self, config: TrainConfig | dict[str, Any]) -> tuple[TrainConfig, Any, Any]:
        """Validate a run's settings and store its data files: (the config pointing at the
        stored copies with the columns it found, the training dataset row, the eval one)."""
        cfg = TrainConfig.from_dict(dict(config)) if isinstance(config, dict) else dataclasses.replace(config)
        validate(cfg)
        with self._lock:
            from backend.catalogue import model_info
            from backend.training.config import load_data

            model_info(cfg.model, self.settings.models_cache)  # ModelError now, not in the worker
        for given in (cfg.data, cfg.eval_data):  # before load_data reads it into memory
            if given:
                check_file_size(given, self.settings.max_upload_bytes)
        # Exactly the validation the worker will meet, plus the row limit; each file is read
        # once, and what gets stored comes from the specs of that read.
        data = load_data(cfg, max_rows=self.settings.max_rows)
        mapping = data.mapping
        train_ds = self._store_dataset(data.spec, None)
        eval_ds = self._store_dataset(data.eval_spec, None) if data.eval_spec else None
        cfg = dataclasses.replace(
            cfg,
            data=train_ds["path"],
            eval_data=eval_ds["path"] if eval_ds else None,
            text_column=mapping.text,
            text_pair_column=mapping.text_pair,
            label_column=mapping.label,
            score_column=None,  # now the label column
            task=data.task.key,  # what "auto" found: the worker trains exactly this task
            task_config=data.task.settings_dict(),  # and its settings, defaults included
        )
        return cfg, train_ds, eval_ds

    def _queue(self, job: Job) -> int:
        columns = (c.key for c in Job.__table__.columns)
        fields = {key: value for key in columns if (value := getattr(job, key)) is not None}

        def insert(session: Any) -> int:
            # a fresh row each attempt: a rolled-back one is spent
            return queue.insert_job(session, self.settings.artifacts_dir, fields)

        job_id = self.db.write_for_request(insert, what="queueing the job")
        wake_local_supervisors()  # the app's own supervisor starts it now, not at its next poll
        return job_id

    def list_jobs(self) -> list[JobRow]:
        """Every job, newest first, as list rows. Answered from memory for
        ``settings.jobs_cache_seconds`` unless this process wrote to the database meanwhile
        (every open page polls this; one query then serves them all)."""
        now, generation = time.monotonic(), self.db.generation
        cached = self._jobs_cache
        if cached and cached[1] == generation and now - cached[0] < self.settings.jobs_cache_seconds:
            return copy.deepcopy(cached[2])
        with self.db.read() as session:
            jobs = list(session.scalars(select(Job).order_by(Job.id.desc())))
            names = views.dataset_names(session, jobs)
        rows = [views.job_row(j, names.get(j.dataset_id or -1)) for j in jobs]
        self._jobs_cache = (now, generation, rows)
        return copy.deepcopy(rows)

    def get_job(self, job_id: int, *, log_tail: int = 100) -> JobDetail:
        """One job in full: row, config, final metrics, metric series and the log's tail."""
        with self.db.read() as session:
            job = self._job(session, job_id)
            names = views.dataset_names(session, [job])
            series = views.series(session, job_id)
        detail = views.job_detail(job, names.get(job.dataset_id or -1), series, log_tail)
        if self.settings.runner == "ray" and log_tail > 0 and job.started_at is not None:
            detail["log"] += self._cluster_log(job, log_tail)
        return detail

    def _cluster_log(self, job: Job, lines: int) -> list[str]:
        """The tail Ray keeps of the job's output (the worker's own log above it is the job's
        story; Ray's holds what only the node saw: set-up, crashes before the log opened)."""
        from jobs.ray_runner import RayRunner  # ray loads only for a Ray deployment

        try:
            if self._ray is None:
                self._ray = RayRunner(self.settings)
            tail = self._ray.logs(job, lines)
        except Exception as exc:  # noqa: BLE001 - the job's page must open without the cluster
            return [f"(Ray's log of this job could not be read: {exc})"]
        return ["── the job's output as its Ray node saw it:", *tail] if tail else []

    def supervisor_running(self) -> bool:
        """True if a live supervisor is watching this database's queue."""
        host = host_name()
        return any(owner_alive(row, host) for row in supervisors(self.db).values())

    def cancel(self, job_id: int) -> JobDetail:
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
            session.execute(update(Job).where(Job.rerun_of_id == job_id).values(rerun_of_id=None))
            session.delete(job)
            session.flush()
            if cache_keys:
                others = session.scalars(select(Job.summary))  # any run may share those features
                cache_keys -= {key for summary in others for key in feature_cache_keys(summary)}
        # Only ever a folder this app named after the job: never a user-chosen path.
        if folder and Path(folder).name == f"job-{job_id}":
            shutil.rmtree(folder, ignore_errors=True)
            with self._lock:
                self._predictors.pop(folder, None)
        for key in cache_keys:  # features no other job's summary names
            (self.settings.feature_cache_dir / f"{key}.safetensors").unlink(missing_ok=True)
