"""The public sweep endpoints (/launch_sweep, /sweeps, /sweep, /cancel_sweep), mixed into
``ui.endpoints.Endpoints``: the Train and Sweeps tabs call the same methods."""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.callers import as_id


class SweepEndpoints:
    """Sweeps for scripts and tabs; needs ``api``, ``method``, ``dataset``, ``_config`` and
    ``shown`` from :class:`ui.endpoints.Endpoints`."""

    api: Any

    def launch_sweep(
        self,
        dataset_id: int,
        method: str | None = None,
        grid: list[str] | None = None,
        methods: list[str] | None = None,
        method_settings: dict[str, Any] | None = None,
        trials: int = 0,
        search: list[str] | None = None,
        pruner: str = "median",
        objective: str = "accuracy",
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
        task: str | None = None,
        task_settings: dict[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Queue a sweep: ``grid`` axes ("rank=2,8,32", one or two), ``methods`` (one run each,
        ``method_settings`` keyed by method), or ``trials`` N of an Optuna search over
        ``search`` ("lr", "rank=2:64"). ``task`` and ``task_settings`` as for ``/launch``; a
        task without accuracy (regression) maximises its score. Returns {sweep_id, status}."""
        keys = [self.method(m)["key"] for m in methods or []]  # type: ignore[attr-defined]
        first = keys[0] if keys else self.method(method or "")["key"]  # type: ignore[attr-defined]
        settings = {self.method(k)["key"]: v for k, v in (method_settings or {}).items()}  # type: ignore[attr-defined]
        own = settings.get(first) if not keys else None
        base = self._config(  # type: ignore[attr-defined]
            as_id(dataset_id, "dataset_id"), first, own, model, epochs, lr, batch_size, max_length, quant,
            as_id(eval_dataset_id, "eval_dataset_id") if eval_dataset_id else None,
            {
                "precision": precision,
                "group_by_length": group_by_length,
                "gradient_checkpointing": gradient_checkpointing,
                "task": task or None,
                "task_config": self._task_config(dataset_id, task, task_settings),  # type: ignore[attr-defined]
            },
        )  # fmt: skip
        sweep_id = self.api.submit_sweep(
            base,
            grid=list(grid or []),
            methods=keys,
            method_settings=settings,
            trials=int(trials or 0),
            search=list(search or []),
            pruner=pruner,
            objective=objective,
            name=(name or "").strip() or None,
        )
        return {"sweep_id": sweep_id, "status": "running"}

    def sweeps(self, request: gr.Request | None = None) -> list[dict[str, Any]]:
        """Every sweep, newest first: id, name, kind, status, trials planned and done."""
        return self.shown(self.api.list_sweeps(), request)  # type: ignore[attr-defined]

    def sweep(self, sweep_id: int, request: gr.Request | None = None) -> dict[str, Any]:
        """One sweep: every trial (params, status, accuracy, macro-F1, trainable parameters,
        training seconds, adapter bytes, Pareto flags) and the best run's job id."""
        return self.shown(self.api.get_sweep(as_id(sweep_id, "sweep_id")), request)  # type: ignore[attr-defined]

    def cancel_sweep(self, sweep_id: int, request: gr.Request | None = None) -> dict[str, Any]:
        """Stop a sweep: no new trials, queued and running ones cancelled."""
        return self.shown(self.api.cancel_sweep(as_id(sweep_id, "sweep_id")), request)  # type: ignore[attr-defined]
