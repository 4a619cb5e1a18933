"""Sweeps: launch a group of runs (a grid, an Optuna search, or one run per method), read
one back with its Pareto front and best run, cancel it.

A grid or method sweep is written in one transaction, the sweep row with every trial's job,
so a bad point refuses the whole sweep and nothing is half-queued. A search writes its row;
the supervisor asks the study for trials as the queue has room (``jobs.sweeps.advance``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select

from backend.errors import ConfigError
from backend.methods import registry
from backend.sweeps import apply_point, grid_points, parse_axis, point_text, search_range
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.config import TrainConfig, validate
from jobs import queue, sweep_views
from jobs.schema import QUEUED, RUNNING, Job, Sweep
from jobs.supervisor_registry import wake_local_supervisors
from jobs.sweeps import OBJECTIVES, PRUNERS, SCORE, finish_sweep, trial_job_fields
from service.api_state import WorkbenchState

MAX_TRIALS = 200


def sweep_objective(objective: str, task: Task) -> str:
    """The metric a sweep maximises: ``score`` (the task's primary metric) for a task that has no
    accuracy, whatever was asked (accuracy is every sweep's default); else what was asked."""
    return objective if "accuracy" in task.headline else SCORE


class SweepsApi(WorkbenchState):
    """Sweeps over the job queue (mixed into ``Workbench``, which provides ``_prepare``)."""

    def submit_sweep(
        self,
        config: TrainConfig | dict[str, Any],
        *,
        grid: Sequence[str] = (),
        methods: Sequence[str] = (),
        method_settings: dict[str, dict[str, Any]] | None = None,
        trials: int = 0,
        search: Sequence[str] = (),
        pruner: str = "median",
        objective: str = "accuracy",
        name: str | None = None,
        seed: int = 0,
    ) -> int:
        """Queue a sweep; returns its id.

        * ``grid``: one or two axes such as ``"rank=2,8,32"`` -> one trial per combination;
        * ``methods``: one trial per method (each its own settings from ``method_settings``
          and an automatic learning rate: one rate does not fit methods 1000x apart);
        * ``trials`` N > 0: an Optuna TPE search of N trials over ``search`` (default: the
          method's main setting and the learning rate), pruned by ``pruner``.
        """
        if objective not in (*OBJECTIVES, SCORE):
            choices = ", ".join((*OBJECTIVES, SCORE))
            raise ConfigError(f"the objective must be one of {choices}, not {objective!r}")
        if pruner not in PRUNERS:
            raise ConfigError(f"the pruner must be one of {', '.join(PRUNERS)}, not {pruner!r}")
        given = {"grid": bool(grid), "methods": bool(methods), "search": trials > 0}
        kinds = [k for k, on in given.items() if on]
        if len(kinds) != 1:
            raise ConfigError(
                "give exactly one of: grid axes (--grid), methods (--methods) or a trial count (--trials)"
            )
        base = dict(config) if isinstance(config, dict) else config.to_dict()
        if kinds[0] == "methods":
            base["method"] = methods[0]
        cfg, train_ds, eval_ds = self._prepare(base)  # type: ignore[attr-defined]
        objective = sweep_objective(objective, tasks.get(cfg.task))
        base_config = cfg.to_dict()
        spec: dict[str, Any] = {"objective": objective, "seed": seed}
        if kinds[0] == "grid":
            axes = [parse_axis(cfg.method, text) for text in grid]
            spec["axes"] = {a.name: list(a.values) for a in axes}
            planned = [(apply_point(base_config, axes, p), p) for p in grid_points(axes)]
        elif kinds[0] == "methods":
            settings = method_settings or {}
            planned = [(self._method_config(base_config, m, settings), {"method": m}) for m in methods]
            spec["methods"] = list(methods)
        else:
            if not 1 <= trials <= MAX_TRIALS:
                raise ConfigError(f"a search has 1 to {MAX_TRIALS} trials, not {trials}")
            space = self._space(cfg.method, search)
            own = [d["name"] for d in space if self._is_method_setting(cfg.method, d["name"])]
            spec.update(trials=trials, pruner=pruner, space=space, method_settings=own)
            planned = []
        for trial_cfg, _ in planned:
            validate(TrainConfig.from_dict(dict(trial_cfg)))  # every point, before anything is written
        sweep_name = name or self._sweep_name(kinds[0], cfg, spec, train_ds["name"])

        def write(session: Any) -> int:
            sweep = Sweep(
                name=sweep_name,
                kind=kinds[0],
                method=None if kinds[0] == "methods" else cfg.method,
                spec=spec,
                base_config=base_config,
                dataset_id=train_ds["id"],
                eval_dataset_id=eval_ds["id"] if eval_ds else None,
                status=RUNNING,
                study_name=f"workbench-sweep-{uuid.uuid4().hex[:12]}" if kinds[0] == "search" else None,
            )
            session.add(sweep)
            session.flush()
            for number, (trial_cfg, point) in enumerate(planned):
                fields = trial_job_fields(sweep, trial_cfg, point, number)
                queue.insert_job(session, self.settings.artifacts_dir, fields)
            return int(sweep.id)

        sweep_id = self.db.write_for_request(write, what="queueing the sweep")
        wake_local_supervisors()
        return sweep_id

    @staticmethod
    def _method_config(
        base: dict[str, Any], method: str, settings: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        registry.get(method)  # a clear error for an unknown method
        return {**base, "method": method, "method_config": dict(settings.get(method) or {}), "lr": "auto"}

    @staticmethod
    def _is_method_setting(method: str, name: str) -> bool:
        import dataclasses

        return name in {f.name for f in dataclasses.fields(registry.get(method).config_cls)}

    @staticmethod
    def _space(method: str, names: Sequence[str]) -> list[dict[str, Any]]:
        spec = registry.get(method)
        chosen = list(names) or [n for n in (spec.name_knob, "lr") if n]
        return [search_range(method, n) for n in chosen]

    @staticmethod
    def _sweep_name(kind: str, cfg: TrainConfig, spec: dict[str, Any], data: str) -> str:
        if kind == "grid":
            axes = {k: ",".join(map(str, v)) for k, v in spec["axes"].items()}
            return f"{cfg.method} grid {point_text(cfg.method, axes)} · {data}"
        if kind == "methods":
            return f"methods {','.join(spec['methods'])} · {data}"
        return f"{cfg.method} search {spec['trials']} trials · {data}"

    def list_sweeps(self) -> list[dict[str, Any]]:
        """Every sweep, newest first: id, name, kind, status, trial counts."""
        with self.db.read() as session:
            sweeps = list(session.scalars(select(Sweep).order_by(Sweep.id.desc())))
            jobs = list(session.scalars(select(Job).where(Job.sweep_id.is_not(None))))
        return [sweep_views.sweep_row(s, [j for j in jobs if j.sweep_id == s.id]) for s in sweeps]

    def get_sweep(self, sweep_id: int) -> dict[str, Any]:
        """One sweep: its trials with their figures, Pareto flags and the best run."""
        with self.db.read() as session:
            sweep = session.get(Sweep, sweep_id)
            if sweep is None:
                raise ConfigError(f"no sweep {sweep_id}")
            jobs = list(session.scalars(select(Job).where(Job.sweep_id == sweep_id).order_by(Job.id)))
        return sweep_views.sweep_detail(sweep, jobs)

    def cancel_sweep(self, sweep_id: int) -> dict[str, Any]:
        """Stop asking for trials and cancel the queued and running ones."""
        detail = self.get_sweep(sweep_id)
        finish_sweep(self.db, sweep_id, "cancelled")
        for trial in detail["trials"]:
            if trial["status"] in (QUEUED, RUNNING):
                queue.request_cancel(self.db, trial["job_id"])
        return self.get_sweep(sweep_id)
