"""Sweeps through the queue: groups of jobs, and the Optuna study behind a search.

A grid or a sweep over methods queues all its trials at once. A search asks its study for
one trial at a time (TPE learns from the trials told so far), as the queue has room; the
supervisor calls :func:`advance` on every poll to tell finished trials and ask new ones.
Trials report their per-epoch evaluation to the study (:class:`TrialReporter` in the
worker) so its pruner can stop hopeless ones, which end ``pruned``.

The study lives in the same database through the same SQLAlchemy URL (Optuna's own tables
beside ours), so a supervisor restart, another supervisor or the UI all see it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import make_url

from backend.errors import ConfigError
from backend.training.callbacks import EpochInfo, TrialPruned
from backend.training.config import TrainConfig, validate
from jobs import queue
from jobs.db import Database
from jobs.reporting import JobLog, JobReporter
from jobs.schema import FINISHED, PRUNED, QUEUED, RUNNING, SUCCEEDED, Job, Sweep, utcnow

OBJECTIVES = ("accuracy", "macro_f1")  # a label task's; any task's primary metric is SCORE
SCORE = "score"
PRUNERS = ("median", "halving", "none")


def optuna_storage(url: str) -> Any:
    """Optuna's RDB storage on our database URL (our own ``?timeout=`` query dropped)."""
    import optuna

    parsed = make_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": float(parsed.query.get("timeout", 30))}  # type: ignore[arg-type]
        parsed = parsed.difference_update_query(["timeout"])
    return optuna.storages.RDBStorage(parsed.render_as_string(hide_password=False), engine_kwargs=kwargs)


def make_pruner(spec: dict[str, Any]) -> Any:
    """The spec's pruner: median (stop a trial below the median of earlier ones at the same
    epoch, after ``startup`` complete trials) or successive halving (ASHA)."""
    import optuna

    kind = spec.get("pruner", "median")
    if kind == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=int(spec.get("startup", 1)), n_warmup_steps=0)
    if kind == "halving":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=2)
    return optuna.pruners.NopPruner()


_STUDIES: dict[tuple[str, str], Any] = {}  # (database URL, study name) -> Study, per process


def load_study(db: Database, sweep: Sweep) -> Any:
    """The sweep's study (created on first use); one object per process, reused every poll."""
    key = (db.url, str(sweep.study_name))
    if key not in _STUDIES:
        _STUDIES[key] = _open_study(db, sweep)
    return _STUDIES[key]


def _open_study(db: Database, sweep: Sweep) -> Any:
    import optuna

    sampler = optuna.samplers.TPESampler(
        seed=int(sweep.spec.get("seed", 0)),
        # TPE's default waits for 10 random trials; a sweep of 6 would never use the model.
        n_startup_trials=max(2, int(sweep.spec["trials"]) // 3),
    )
    return optuna.create_study(
        study_name=sweep.study_name,
        storage=optuna_storage(db.url),
        sampler=sampler,
        pruner=make_pruner(sweep.spec),
        direction="maximize",
        load_if_exists=True,
    )


def suggest(trial: Any, space: list[dict[str, Any]]) -> dict[str, Any]:
    """One point of ``space`` (``backend.sweeps.search_range`` entries) from an Optuna trial."""
    point = {}
    for dim in space:
        if dim["kind"] == "categorical":
            point[dim["name"]] = trial.suggest_categorical(dim["name"], dim["choices"])
        elif dim["kind"] == "int":
            point[dim["name"]] = trial.suggest_int(
                dim["name"], int(dim["low"]), int(dim["high"]), log=dim["log"]
            )
        else:
            point[dim["name"]] = trial.suggest_float(dim["name"], dim["low"], dim["high"], log=dim["log"])
    return point


def trial_config(sweep: Sweep, point: dict[str, Any]) -> dict[str, Any]:
    """The trial's TrainConfig dict, validated (a bad point fails here, not in a worker)."""
    from backend.sweeps import Axis, apply_point

    own = set(sweep.spec.get("method_settings", []))
    axes = [Axis(name, (value,), name in own) for name, value in point.items()]
    config = apply_point(sweep.base_config, axes, point)
    validate(TrainConfig.from_dict(config))
    return config


def trial_job_fields(
    sweep: Sweep, config: dict[str, Any], point: dict[str, Any], number: int | None
) -> dict[str, Any]:
    """A trial's job row: the sweep's data, the point's settings, named after both."""
    from backend.sweeps import point_text

    return {
        "name": f"{sweep.name} · {point_text(config['method'], point)}",
        "status": QUEUED,
        "method": config["method"],
        "model": config["model"],
        "quant": config.get("quant", "none"),
        "config": config,
        "dataset_id": sweep.dataset_id,
        "eval_dataset_id": sweep.eval_dataset_id,
        "sweep_id": sweep.id,
        "trial_params": point,
        "trial_number": number,
    }


def _tell_finished(study: Any, jobs: list[Job], objective: str) -> None:
    """Tell the study every trial whose job ended and that it still thinks runs."""
    import optuna
    from optuna.trial import TrialState

    running = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
    for job in jobs:
        if job.trial_number not in running or job.status not in FINISHED:
            continue
        value = (job.summary or {}).get(objective) if job.status == SUCCEEDED else None
        try:
            if value is not None:
                study.tell(job.trial_number, float(value))
            else:
                study.tell(
                    job.trial_number, state=TrialState.PRUNED if job.status == PRUNED else TrialState.FAIL
                )
        except (ValueError, RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
            pass  # another supervisor told it first


def advance(db: Database, artifacts_dir: Path, room: int, only: set[int] | None = None) -> list[int]:
    """Tell finished search trials, ask new ones while the queue has ``room``, and mark
    sweeps whose trials have all ended finished (of ``only``, if given). Returns the ids of
    the jobs it queued."""
    queued: list[int] = []
    query = select(Sweep).where(Sweep.status == RUNNING)
    if only is not None:
        query = query.where(Sweep.id.in_(list(only)))
    with db.read() as session:
        sweeps = list(session.scalars(query))
    for sweep in sweeps:
        with db.read() as session:
            jobs = list(session.scalars(select(Job).where(Job.sweep_id == sweep.id)))
        active = sum(j.status in (QUEUED, RUNNING) for j in jobs)
        complete = True
        all_queued = len(jobs) >= int(sweep.spec.get("trials", 0))
        if sweep.kind == "search" and active > 0 and (active >= _parallel(sweep) or all_queued):
            continue  # nothing to ask or tell until a trial ends: no study round trip every poll
        if sweep.kind == "search":
            made, all_asked = _ask_trials(
                db, sweep, jobs, artifacts_dir, min(room, _parallel(sweep) - active)
            )
            queued += made
            room -= len(made)
            active += len(made)
            complete = all_asked
        if complete and active == 0:
            finish_sweep(db, sweep.id, "finished")
    return queued


def _parallel(sweep: Sweep) -> int:
    return int(sweep.spec.get("parallel", 1))


def _ask_trials(
    db: Database, sweep: Sweep, jobs: list[Job], artifacts_dir: Path, room: int
) -> tuple[list[int], bool]:
    """Tell the study what ended, then queue up to ``room`` new trials; (new job ids, whether
    every one of the sweep's trials has now been asked)."""
    from optuna.trial import TrialState

    study = load_study(db, sweep)
    _tell_finished(study, jobs, sweep.spec.get("objective", "accuracy"))
    wanted = int(sweep.spec["trials"])
    made: list[int] = []
    asked = len(study.get_trials(deepcopy=False))
    while asked < wanted and len(made) < room:
        trial = study.ask()
        asked += 1
        point = suggest(trial, sweep.spec["space"])
        try:
            config = trial_config(sweep, point)
        except ConfigError:  # e.g. a rank the model cannot take: a failed trial, told at once
            study.tell(trial, state=TrialState.FAIL)
            continue
        fields = trial_job_fields(sweep, config, point, trial.number)
        with db.write() as session:
            made.append(queue.insert_job(session, artifacts_dir, fields))
    return made, asked >= wanted


def finish_sweep(db: Database, sweep_id: int, status: str) -> None:
    with db.write() as session:
        session.execute(
            update(Sweep)
            .where(Sweep.id == sweep_id, Sweep.status == RUNNING)
            .values(status=status, finished_at=utcnow())
        )


class TrialReporter(JobReporter):
    """A sweep trial's callback: as :class:`JobReporter`, plus each evaluation reported to the
    study, whose pruner may end the trial (``TrialPruned``: the job ends ``pruned``)."""

    def __init__(self, db: Database, job: Job, sweep: Sweep, log: JobLog) -> None:
        super().__init__(db, job.id, log)
        import optuna

        study = load_study(db, sweep)
        trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, job.trial_number)
        self.trial = optuna.trial.Trial(study, trial_id)
        self.objective = sweep.spec.get("objective", "accuracy")

    def on_epoch(self, info: EpochInfo) -> None:
        super().on_epoch(info)
        value = info.metrics.get(self.objective)
        if value is None:
            return
        self.trial.report(float(value), step=info.epoch)
        if info.epoch < info.total_epochs and self.trial.should_prune():
            raise TrialPruned(
                f"pruned after epoch {info.epoch}: {self.objective} {value:.4f} is below what "
                "earlier trials had reached by this epoch"
            )
