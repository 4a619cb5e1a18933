"""The job database's tables (SQLAlchemy 2.0 typed models).

One row per dataset, job, metric point and live supervisor. A job's whole life is on
its row: the queue state, who runs it (host, pid, heartbeat), live progress, the
user-readable error apart from the traceback, final metrics and its lineage. Log lines
live in a file per job (``Job.log_path``, ``<artifact_dir>/job.log``): the worker's
stdout/stderr go there too, so even a crash's last words are kept, and the database
stays small.

Changing a table means adding a migration to ``jobs/migrations.py`` as well, so that
databases made by older versions still open.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from backend.training.callbacks import SUMMARY_METRICS

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, PRUNED = (
    "queued",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "pruned",  # a sweep trial its pruner stopped as hopeless: not a failure
)
STATUSES = (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, PRUNED)
FINISHED = (SUCCEEDED, FAILED, CANCELLED, PRUNED)
# The job columns that hold a finished run's summary figures (same names as the summary).
METRIC_COLUMNS = SUMMARY_METRICS


def utcnow() -> datetime:
    """Timezone-aware now; every timestamp in the database is UTC."""
    return datetime.now(timezone.utc)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC (SQLite has no time zones), hands back aware UTC datetimes."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column; use jobs.schema.utcnow()")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=timezone.utc)


class Base(DeclarativeBase):
    """Declarative base of every table here."""

    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON,
        list[Any]: JSON,
    }


class Dataset(Base):
    """A stored copy of an uploaded file plus how its columns map to text/label."""

    __tablename__ = "datasets"
    __table_args__ = (UniqueConstraint("sha256", "mapping_key", name="uq_dataset_file_mapping"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    # text/pair/label joined: a unique key that treats "no pair column" as a value
    # (SQL unique constraints consider NULLs distinct, which would allow duplicates).
    mapping_key: Mapped[str] = mapped_column(Text)
    text_column: Mapped[str] = mapped_column(String(200))
    text_pair_column: Mapped[str | None] = mapped_column(String(200))
    label_column: Mapped[str] = mapped_column(String(200))
    columns: Mapped[list[Any]]
    rows: Mapped[int]
    invalid_rows: Mapped[int] = mapped_column(default=0)
    label_counts: Mapped[dict[str, Any]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Sweep(Base):
    """A group of runs that answer one question: a grid over one or two settings, an Optuna
    search of N trials, or one run per method ("compare methods"). Its trials are jobs."""

    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(300))
    kind: Mapped[str] = mapped_column(String(16))  # grid, search, methods
    method: Mapped[str | None] = mapped_column(String(32))  # None: a sweep over methods
    # what it tries: grid axes, the search space and trial count, the pruner, the objective
    spec: Mapped[dict[str, Any]]
    base_config: Mapped[dict[str, Any]]  # TrainConfig.to_dict() every trial starts from
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    eval_dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(16), default=RUNNING)  # running, finished, cancelled
    study_name: Mapped[str | None] = mapped_column(String(200))  # the Optuna study (search only)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]


class Job(Base):
    """One training run through the queue: queued -> running -> succeeded/failed/cancelled."""

    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_status_id", "status", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(300))
    status: Mapped[str] = mapped_column(String(16), default=QUEUED)
    method: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(Text)
    quant: Mapped[str] = mapped_column(String(8), default="none")
    config: Mapped[dict[str, Any]]  # TrainConfig.to_dict(), data paths point at stored copies
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    eval_dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    device: Mapped[str | None] = mapped_column(String(32))  # where it actually ran
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    # who runs it: the claiming supervisor, the worker process and its liveness
    claimed_by: Mapped[str | None] = mapped_column(String(64))
    worker_host: Mapped[str | None] = mapped_column(String(255))
    worker_pid: Mapped[int | None]
    worker_started: Mapped[float | None]  # process start time, guards against PID reuse
    gpu: Mapped[int | None]  # the GPU index it holds on worker_host (None: CPU or a fixed device)
    heartbeat_at: Mapped[datetime | None]
    cancel_requested_at: Mapped[datetime | None]

    # live progress
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    epoch: Mapped[int | None]
    total_epochs: Mapped[int | None]
    step: Mapped[int | None]
    total_steps: Mapped[int | None]
    eta_seconds: Mapped[float | None]
    checkpoint_epoch: Mapped[int | None]

    # outcome
    error: Mapped[str | None] = mapped_column(Text)  # what the user reads
    error_kind: Mapped[str | None] = mapped_column(String(16))  # user, memory, crash, internal
    error_detail: Mapped[str | None] = mapped_column(Text)  # traceback, for bug reports
    artifact_dir: Mapped[str | None] = mapped_column(Text)
    log_path: Mapped[str | None] = mapped_column(Text)
    task: Mapped[str | None] = mapped_column(String(32))  # backend.tasks key; None: the default task
    score: Mapped[float | None]  # the task's primary metric (its summary's "primary_metric")
    # a finished run's results as every task has them (issue 46): what ``score`` holds, its 95%
    # interval, the task's headline metrics as one object, and its trivial baseline
    primary_metric: Mapped[str | None] = mapped_column(String(64))
    score_ci: Mapped[list[Any] | None] = mapped_column(JSON)
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    baseline_name: Mapped[str | None] = mapped_column(String(200))
    baseline_score: Mapped[float | None]
    accuracy: Mapped[float | None]  # a label task's (kept: older clients and runs read them)
    macro_f1: Mapped[float | None]
    eval_loss: Mapped[float | None]
    trainable_params: Mapped[int | None]
    total_params: Mapped[int | None]
    train_seconds: Mapped[float | None]
    peak_rss_mb: Mapped[float | None]
    adapter_bytes: Mapped[int | None]
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # exactly run_training's dict
    evaluation: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # best epoch: per-class, confusion

    # lineage: a resumed job points at the job it continues and the checkpoint it starts from
    resumed_from_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    resume_checkpoint: Mapped[str | None] = mapped_column(Text)
    # a job launched from another run's settings ("run again", "use these settings") points at it
    rerun_of_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))

    # a sweep's trial: which sweep, which point (the swept settings) and its Optuna number
    sweep_id: Mapped[int | None] = mapped_column(ForeignKey("sweeps.id", ondelete="SET NULL"))
    trial_params: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    trial_number: Mapped[int | None]


class Metric(Base):
    """One value of a training curve: per-step loss/lr/throughput, per-epoch evaluation,
    per-layer evaluation of a probe layer sweep (``layer`` set, ``epoch`` NULL)."""

    __tablename__ = "metrics"
    __table_args__ = (Index("ix_metrics_job_name_step", "job_id", "name", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    step: Mapped[int]
    epoch: Mapped[int | None]
    layer: Mapped[int | None]  # a sweep's probed layer: 0 = embeddings, 1..L = transformer layers
    name: Mapped[str] = mapped_column(String(64))
    value: Mapped[float]
    time: Mapped[float]  # unix seconds: cheap to write on every step


class SupervisorRow(Base):
    """A live supervisor: lets others tell an orphaned job from one that is looked after."""

    __tablename__ = "supervisors"

    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int]
    process_started: Mapped[float]
    max_concurrent: Mapped[int]
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)
