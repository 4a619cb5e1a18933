"""Sweeps as the plain dicts the API returns: a list row, and the detail with every trial,
its Pareto flags and the best run."""

from __future__ import annotations

from typing import Any

from backend.sweeps import pareto_flags
from jobs.schema import FINISHED, PRUNED, SUCCEEDED, Job, Sweep

# The costs a trial's accuracy is weighed against; each gives a 2-D front, and "pareto" is
# the front over all three at once (accuracy up, every cost down).
COSTS = ("trainable_params", "train_seconds", "adapter_bytes")


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
        "accuracy": job.accuracy if ok else None,
        "macro_f1": job.macro_f1 if ok else None,
        "trainable_params": job.trainable_params if ok else None,
        "train_seconds": job.train_seconds if ok else None,
        "adapter_bytes": job.adapter_bytes if ok else None,
        # the accuracy's 95% interval (backend.significance): the Pareto chart's error bar
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


def sweep_detail(sweep: Sweep, jobs: list[Job]) -> dict[str, Any]:
    """Every trial with ``pareto`` (over all costs) and ``pareto_by`` (one flag per cost),
    the best trial (objective, then fewer trainable parameters) and the sweep's settings."""
    objective = sweep.spec.get("objective", "accuracy")
    trials = [trial_row(j) for j in jobs]
    overall = pareto_flags(trials, {objective: "max", **{c: "min" for c in COSTS}})
    by_cost = {c: pareto_flags(trials, {objective: "max", c: "min"}) for c in COSTS}
    for i, trial in enumerate(trials):
        trial["pareto"] = overall[i]
        trial["pareto_by"] = {c: flags[i] for c, flags in by_cost.items()}
    scored = [t for t in trials if t[objective] is not None]
    best = max(scored, key=lambda t: (t[objective], -(t["trainable_params"] or 0)), default=None)
    return {
        **sweep_row(sweep, jobs),
        "spec": sweep.spec,
        "base_config": sweep.base_config,
        "objective": objective,
        "best_job_id": best["job_id"] if best else None,
        "pruned": sum(t["status"] == PRUNED for t in trials),
        "trials": trials,
    }
