"""Job rows as the plain dicts the API returns: list rows, details, series, comparisons.

Everything here only reads. Timestamps become ISO 8601 strings (UTC) so the dicts go
straight to JSON (CLI ``--json``, the UI).
"""

from __future__ import annotations

import json
import statistics
from collections import deque
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.methods import registry
from backend.tasks import registry as tasks
from jobs.records import (
    CompareRow,
    ConfigDifference,
    Confusion,
    JobDetail,
    JobRow,
    LearningRate,
    MajorityRow,
    Series,
)
from jobs.schema import METRIC_COLUMNS, Dataset, Job, Metric

STEP_SERIES = ("train_loss", "learning_rate", "samples_per_second", "tokens_per_second")
# eval_score / layer_score: the task's primary metric (what a regression run's charts draw)
EPOCH_SERIES = ("eval_accuracy", "eval_macro_f1", "eval_score", "eval_loss", "epoch_train_loss")
# A probe layer sweep's results, one point per layer (``Metric.layer``): [[layer, value]],
# 0 = embeddings. A sweep has these instead of the epoch series.
LAYER_SERIES = ("layer_accuracy", "layer_macro_f1", "layer_score")
MAX_POINTS = 2000  # per series; longer curves are thinned evenly (the last point is kept)
COMPARE_FIELDS = (
    "accuracy",
    "macro_f1",
    "trainable_params",
    "train_seconds",
    "peak_rss_mb",
    "adapter_bytes",
    "quant",
    "status",
)


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def knobs(method: str, method_config: dict[str, Any] | None) -> str:
    """Short text of a method's key setting plus every setting changed from its default
    (``MethodSpec.knob_text``: the method file says which setting names a run, and how)."""
    try:
        spec = registry.get(method)
        cfg = spec.make_config(method_config or {})
    except Exception:  # noqa: BLE001 - a row from an older version: show what it stored
        return " ".join(f"{k}={v}" for k, v in (method_config or {}).items())
    return spec.knob_text(cfg)


def default_job_name(method: str, method_config: dict[str, Any] | None, dataset: str) -> str:
    """E.g. "lora r=8 · sst2-train"."""
    knob_text = knobs(method, method_config)
    return f"{method} {knob_text} · {dataset}" if knob_text else f"{method} · {dataset}"


def task_fields(job: Job) -> dict[str, Any]:
    """The run's task, its primary metric and its score (a run from before tasks: accuracy)."""
    task = tasks.get(job.task)
    score = job.score if job.score is not None else job.accuracy
    headline = list(task.headline)
    # the run's own (tags without entities are scored by word accuracy); the task's before it ends
    primary = job.primary_metric or (job.summary or {}).get("primary_metric") or task.primary_metric
    return {"task": task.key, "primary_metric": primary, "headline": headline, "score": score}


def job_row(job: Job, dataset_name: str | None) -> JobRow:
    """The list view of a job."""
    return {
        "id": job.id,
        "name": job.name,
        "status": job.status,
        "method": job.method,
        "model": job.model,
        "quant": job.quant,
        "dataset": dataset_name,
        "dataset_id": job.dataset_id,
        "eval_dataset_id": job.eval_dataset_id,
        "knobs": knobs(job.method, (job.config or {}).get("method_config")),
        "progress": job.progress or 0.0,
        "epoch": job.epoch,
        "total_epochs": job.total_epochs,
        "step": job.step,
        "total_steps": job.total_steps,
        "eta_seconds": job.eta_seconds,
        **task_fields(job),
        "accuracy": job.accuracy,
        "macro_f1": job.macro_f1,
        "created": iso(job.created_at),
        "started": iso(job.started_at),
        "finished": iso(job.finished_at),
        "error": job.error,
        "learning_flag": (job.summary or {}).get("learning_flag"),
        "resumed_from": job.resumed_from_id,
        "rerun_of": job.rerun_of_id,
        "cancel_requested": job.cancel_requested_at is not None,
        "where": where(job),
    }


def where(job: Job) -> str | None:
    """The node and device a job runs on, e.g. "node-3 · GPU 1" (None before a worker starts).

    Shown to every caller: on a cluster, which machine holds a job is what a team asks first."""
    if job.worker_host is None or job.started_at is None:
        return None
    device = f"GPU {job.gpu}" if job.gpu is not None else job.device
    return f"{job.worker_host} · {device}" if device else job.worker_host


def job_detail(job: Job, dataset_name: str | None, series: Series, log_tail: int) -> JobDetail:
    """Everything about one job: the list row plus config, metrics, series and log."""
    detail = cast(JobDetail, job_row(job, dataset_name))
    detail.update(
        config=job.config,
        metrics=job.summary,
        evaluation=job.evaluation,
        device=job.device,
        worker_pid=job.worker_pid,
        worker_host=job.worker_host,
        artifact_dir=job.artifact_dir,
        error_kind=job.error_kind,
        error_detail=job.error_detail,
        checkpoint_epoch=job.checkpoint_epoch,
        heartbeat=iso(job.heartbeat_at),
        log_path=job.log_path,
        log=read_tail(job.log_path, log_tail),
        series=series,
        **{column: getattr(job, column) for column in METRIC_COLUMNS},
    )
    if job.summary and job.summary.get("layer_accuracy"):
        detail["layer_accuracy"] = job.summary["layer_accuracy"]
    detail["lr_search"] = (job.summary or {}).get("lr_search")
    return detail


def read_tail(path: str | None, lines: int) -> list[str]:
    """The last ``lines`` lines of a log file ([] if it does not exist yet)."""
    if not path or lines <= 0 or not Path(path).is_file():
        return []
    with Path(path).open(encoding="utf-8", errors="replace") as f:
        return [line.rstrip("\n") for line in deque(f, maxlen=lines)]


def thin(points: list[list[float]]) -> list[list[float]]:
    """At most MAX_POINTS points, evenly spaced, always ending with the last one."""
    if len(points) <= MAX_POINTS:
        return points
    stride = -(-len(points) // MAX_POINTS)
    kept = points[::stride]
    return kept if kept[-1] is points[-1] else [*kept, points[-1]]


def series(session: Session, job_id: int) -> Series:
    """Training curves: step-indexed [[step, value]], epoch-indexed [[epoch, value]] and,
    for probe sweeps, layer-indexed [[layer, value]]."""
    out: dict[str, list[list[float]]] = {name: [] for name in (*STEP_SERIES, *EPOCH_SERIES, *LAYER_SERIES)}
    rows = session.execute(
        select(Metric.name, Metric.step, Metric.epoch, Metric.layer, Metric.value)
        .where(Metric.job_id == job_id)
        .order_by(Metric.id)
    )
    for name, step, epoch, layer, value in rows:
        if name in LAYER_SERIES and layer is not None:
            out[name].append([layer, value])
        elif name in STEP_SERIES:
            out[name].append([step, value])
        elif name in EPOCH_SERIES:
            out[name].append([epoch, value])
    return {name: thin(points) for name, points in out.items()}


def dataset_names(session: Session, jobs: list[Job]) -> dict[int, str]:
    """Dataset id -> name for the datasets ``jobs`` use."""
    ids = {j.dataset_id for j in jobs if j.dataset_id is not None}
    if not ids:
        return {}
    return dict(session.execute(select(Dataset.id, Dataset.name).where(Dataset.id.in_(ids))).all())


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"method_config": {"rank": 8}} -> {"method_config.rank": 8}."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_diff(configs: dict[int, dict[str, Any]]) -> list[ConfigDifference]:
    """The config fields whose values differ between jobs, each with every job's value."""
    flat = {job_id: flatten(cfg or {}) for job_id, cfg in configs.items()}
    fields = sorted({name for values in flat.values() for name in values})
    diff: list[ConfigDifference] = []
    for name in fields:
        values = {job_id: values.get(name) for job_id, values in flat.items()}
        if len({repr(v) for v in values.values()}) > 1:
            diff.append({"field": name, "values": values})
    return diff


def seed_key(job: Job) -> str:
    """What runs that differ only in seed share: the settings without the seed, and the data."""
    config = {k: v for k, v in (job.config or {}).items() if k != "seed"}
    return json.dumps([config, job.dataset_id, job.eval_dataset_id], sort_keys=True, default=str)


def pooled_seeds(jobs: list[Job]) -> list[dict[str, Any]]:
    """Finished runs that differ only in seed, pooled: one entry per group of two or more, with
    the mean ± sd over its n runs (sd with n - 1) of ``score`` (the task's primary metric) and of
    each of the task's ``headline`` metrics (accuracy and macro-F1; Spearman, ...; entity F1, ...),
    as ``<metric>`` and ``<metric>_sd``. Every task pools, not only those with an accuracy."""
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        if job.status == "succeeded" and task_fields(job)["score"] is not None:
            groups.setdefault(seed_key(job), []).append(job)
    pooled = []
    for members in groups.values():
        if len(members) < 2:
            continue
        fields = task_fields(members[0])
        entry: dict[str, Any] = {"jobs": [j.id for j in members], "name": members[0].name, "n": len(members)}
        entry["seeds"] = [(j.config or {}).get("seed") for j in members]
        entry |= {key: fields[key] for key in ("task", "primary_metric", "headline")}
        for metric in ("score", *fields["headline"]):
            values = [v for j in members if (v := metric_of(j, metric)) is not None]
            entry[metric] = statistics.mean(values) if values else None
            entry[f"{metric}_sd"] = statistics.stdev(values) if len(values) > 1 else None
        pooled.append(entry)
    return pooled


def metric_of(job: Job, name: str) -> float | None:
    """A finished run's metric: its score, one its summary reports, or (a run from before
    summaries kept them) its accuracy or macro-F1 column."""
    value = task_fields(job)["score"] if name == "score" else (job.summary or {}).get(name)
    if value is None and name in ("accuracy", "macro_f1"):
        value = getattr(job, name)
    return None if value is None else float(value)


def compare_row(job: Job) -> CompareRow:
    """One row of the comparison table."""
    total, trainable = job.total_params, job.trainable_params
    percent = 100.0 * trainable / total if trainable is not None and total else None
    return {
        "id": job.id,
        "name": job.name,
        "method": job.method,
        "knobs": knobs(job.method, (job.config or {}).get("method_config")),
        **task_fields(job),
        **{field: getattr(job, field) for field in COMPARE_FIELDS},
        "trainable_percent": percent,
        **learning_rate(job),
        "learning_flag": (job.summary or {}).get("learning_flag"),
        "lr_choice_warning": (job.summary or {}).get("lr_choice_warning"),
        "score_ci": job.score_ci or (job.summary or {}).get("score_ci"),
        "macro_f1_ci": (job.summary or {}).get("macro_f1_ci"),
    }


def learning_rate(job: Job) -> LearningRate:
    """The learning rate a run trained with, and whether the search chose it."""
    summary, config = job.summary or {}, job.config or {}
    return {"lr": summary.get("lr", config.get("lr")), "lr_auto": bool(summary.get("lr_search"))}


def majority_rows(jobs: list[Job]) -> list[MajorityRow]:
    """The trivial baseline of each task and evaluation set among ``jobs`` (one row per set):
    the majority class, the training mean, every word 'O', as each run's task stored it.

    Always shown beside compared runs: a run is only worth something above this line.
    """
    rows: dict[tuple[Any, ...], MajorityRow] = {}
    for job in jobs:
        fields = task_fields(job)
        task = tasks.get(fields["task"])
        baseline = (job.summary or {}).get(task.baseline_key)
        if not baseline:
            continue
        # a run from before tasks stored no "score" in its baseline: its accuracy was it
        score = baseline.get("score", baseline.get("accuracy"))
        key = (task.key, job.dataset_id, job.eval_dataset_id, score, baseline.get("macro_f1"))
        row: MajorityRow = {
            "jobs": [],
            "task": task.key,
            "primary_metric": fields["primary_metric"],
            "label": task.baseline_label,
            "score": score,
            "label_id": baseline.get("label_id"),
            "accuracy": baseline.get("accuracy"),
            "macro_f1": baseline.get("macro_f1"),
        }
        rows.setdefault(key, row)["jobs"].append(job.id)
    return list(rows.values())


def per_class_f1(job: Job) -> dict[str, float] | None:
    """Label -> F1 at the best epoch, for a finished job."""
    if not job.evaluation:
        return None
    return {label: m["f1"] for label, m in job.evaluation["per_class"].items()}


def confusion(job: Job) -> Confusion | None:
    """{"labels": [...], "matrix": [[...]]} at the best epoch (rows: true, columns: predicted);
    None for a task without one (a score, a tag per word)."""
    if not job.evaluation or not job.evaluation.get("confusion_matrix"):
        return None
    return {"labels": job.evaluation["labels"], "matrix": job.evaluation["confusion_matrix"]}
