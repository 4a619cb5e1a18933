"""What every part of the Workbench shares: settings, the database, one lock, loaded models."""

from __future__ import annotations

import threading
from typing import Any

from backend.errors import ConfigError
from backend.settings import Settings
from jobs.db import Database
from jobs.schema import SUCCEEDED, Job


class WorkbenchState:
    """The state the Workbench's parts (datasets, catalogue, jobs, artifacts) share."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self._predictors: dict[str, Any] = {}
        self._jobs_cache: tuple[float, int, list[Any]] | None = None  # (when, db generation, rows)
        self._tokenizer: Any = None
        self._ray: Any = None  # a jobs.ray_runner.RayRunner, made on first need (runner "ray")
        # One lock around everything that may import transformers: its lazy module is
        # not thread-safe on first import, and the UI calls in from several threads.
        self._lock = threading.RLock()

    def _job(self, session: Any, job_id: int) -> Job:
        job = session.get(Job, job_id)
        if job is None:
            raise ConfigError(f"no job {job_id}")
        return job

    def _finished_job(self, job_id: int) -> Job:
        with self.db.read() as session:
            job = self._job(session, job_id)
        if job.status != SUCCEEDED or not job.artifact_dir:
            raise ConfigError(f"job {job_id} is {job.status}; only succeeded jobs have a trained model")
        return job
