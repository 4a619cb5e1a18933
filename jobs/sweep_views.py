"""Sweeps as the plain dicts the API returns: a list row, and the detail with every trial,
its Pareto flags and the best run."""

from __future__ import annotations

import statistics
from typing import Any

from backend.sweeps import pareto_flags
from jobs.schema import FINISHED, PRUNED, SUCCEEDED, Job, Sweep
from jobs.views import seed_key, task_fields

# The costs a trial's accuracy is weighed against; each gives a 2-D front, and "pareto" is
# the front over all three at once (accuracy up, every cost down).
COSTS = ("trainable_params", "train_seconds", "adapter_bytes")
METRICS = ("score", "accuracy", "macro_f1")


def _iso(value: Any) -> str | None:
    return None if value is None else value.isoformat()


def trial_row(job: Job) -> dict[str, Any]:
    """One trial's figures (None until it succeeded)."""
    ok = job.status == SUCCEEDED
    return {
        "job_id": job.id,
        "name": job.name,
        "method": job.method,
        "params": job.trial_params or {},
        "status": job.status,
        "score": job.score if ok else None,  # the task's primary metric (objective "score")
        "primary_metric": task_fields(job)["primary_metric"],  # what "score" holds
        "accuracy": job.accuracy if ok else None,
        "macro_f1": job.macro_f1 if ok else None,
        "trainable_params": job.trainable_params if ok else None,
        "train_seconds": job.train_seconds if ok else None,
        "adapter_bytes": job.adapter_bytes if ok else None,
        # the score's 95% interval (backend.run.run_intervals): the Pareto chart's error bar
        "score_ci": (job.summary or {}).get("score_ci") if ok else None,
        "error": job.error,
    }


def sweep_row(sweep: Sweep, jobs: list[Job]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for job in jobs:
        counts[job.status] = counts.get(job.status, 0) + 1
    planned = int(sweep.spec.get("trials") or len(jobs))
    return {
        "id": sweep.id,
        "name": sweep.name,
        "kind": sweep.kind,
        "method": sweep.method,
        "status": sweep.status,
        "trials_planned": planned,
        "trials_done": sum(n for s, n in counts.items() if s in FINISHED),
        "status_counts": counts,
        "created": _iso(sweep.created_at),
        "finished": _iso(sweep.finished_at),
    }


def seed_points(trials: list[dict[str, Any]], jobs: list[Job], objective: str) -> list[dict[str, Any]]:
    """The points the Pareto view plots: trials that differ only in seed pooled into one, at
    the mean of their objective and costs, with the spread (sd over n seeds, n - 1) as its bar.
    A point's ``job_id`` is its best seed's run: clicking it opens that run."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for trial, job in zip(trials, jobs, strict=True):
        if trial[objective] is not None:
            groups.setdefault(seed_key(job), []).append(trial)
    points = []
    for members in groups.values():
        top = max(members, key=lambda t: t[objective])
        point = {**top, "job_ids": [t["job_id"] for t in members], "n": len(members)}
        if len(members) > 1:
            point["params"] = {k: v for k, v in top["params"].items() if k != "seed"}
            for field in (*METRICS, *COSTS):
                values = [float(t[field]) for t in members if t[field] is not None]
                point[field] = statistics.mean(values) if values else None
            values = [float(t[objective]) for t in members]
            point["spread"] = statistics.stdev(values)
            point["score_ci"] = [point[objective] - point["spread"], point[objective] + point["spread"]]
        points.append(point)
    return points


def sweep_detail(sweep: Sweep, jobs: list[Job]) -> dict[str, Any]:
    """Every trial, and ``points``: the trials with seeds pooled (:func:`seed_points`), each
    with ``pareto`` (over all costs) and ``pareto_by`` (one flag per cost). A trial carries its
    point's flags. The best point is the best mean objective (then fewer trainable parameters),
    and ``best_job_id`` its best seed's run; a sweep without a seed axis has a point per trial."""
    objective = sweep.spec.get("objective", "accuracy")
    trials = [trial_row(j) for j in jobs]
    points = seed_points(trials, jobs, objective)
    overall = pareto_flags(points, {objective: "max", **{c: "min" for c in COSTS}})
    by_cost = {c: pareto_flags(points, {objective: "max", c: "min"}) for c in COSTS}
    flags = {}
    for i, point in enumerate(points):
        point["pareto"] = overall[i]
        point["pareto_by"] = {c: marks[i] for c, marks in by_cost.items()}
        flags.update(dict.fromkeys(point["job_ids"], (point["pareto"], point["pareto_by"])))
    for trial in trials:
        trial["pareto"], trial["pareto_by"] = flags.get(trial["job_id"], (False, dict.fromkeys(COSTS, False)))
    best = max(points, key=lambda p: (p[objective], -(p["trainable_params"] or 0)), default=None)
    return {
        **sweep_row(sweep, jobs),
        "spec": sweep.spec,
        "base_config": sweep.base_config,
        "objective": objective,
        "best_job_id": best["job_id"] if best else None,
        "pruned": sum(t["status"] == PRUNED for t in trials),
        "trials": trials,
        "points": points,
    }
