"""The Workbench's catalogue: base models, methods and settings (with metadata), plans, device."""

from __future__ import annotations

import os
import typing
from typing import Any

from backend.catalogue import list_models
from backend.errors import ConfigError
from backend.methods import registry
from backend.methods.base import fields_info
from backend.training.config import TrainConfig, validate
from jobs import datasets
from service.api_state import WorkbenchState
from service.records import (
    DeviceInfo,
    FieldInfo,
    MethodInfo,
    ParameterCount,
    RunPlan,
)


def _field_info(cls: type) -> list[FieldInfo]:
    """Every setting of a method's Config or of ``TrainConfig``, from its metadata (``knob``)."""
    return typing.cast(list[FieldInfo], fields_info(cls))


class CatalogueApi(WorkbenchState):
    """What can be trained, with which settings, and what a launch would do."""

    def list_models(self) -> list[str]:
        """Base models for the picker: the offline default first, then models_cache/ folders."""
        return list_models(self.settings.models_cache)

    def list_methods(self) -> list[MethodInfo]:
        """Every method with the form fields its settings need."""
        return [
            {
                "key": s.key,
                "label": s.label,
                "description": s.description,
                "library": s.library,
                "default_lr": s.default_lr,
                "default_epochs": s.default_epochs,
                "freezes_base": s.freezes_base,
                "quantizable": s.quantizable,
                "mergeable": s.mergeable,
                "resumable": s.resumable,
                "probes_layers": s.probes_layers,
                "default": s.key == registry.DEFAULT,  # what a form starts with
                "fields": _field_info(s.config_cls),
            }
            for s in registry.all_methods()
        ]

    def list_settings(self) -> list[FieldInfo]:
        """The settings every method shares (epochs, batch size, ...), described like a
        method's fields: what the UI's controls and the CLI's flags are made from."""
        return _field_info(TrainConfig)

    def count_parameters(
        self, model: str, method: str, method_config: dict[str, Any] | None, num_labels: int = 2
    ) -> ParameterCount:
        """Exact trainable/total parameters, computed without loading weights."""
        from backend.training.params import count_parameters  # deferred: torch, for start-up

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
    ) -> RunPlan:
        """Epochs, optimizer steps and learning-rate candidates a launch would use (before launch)."""
        from backend.training.autotune import describe_plan  # deferred: pandas/torch, for start-up

        row, cfg = self._dataset_config(dataset_id, method, method_config, settings)
        return describe_plan(cfg, row.rows - (row.invalid_rows or 0), has_eval_file)

    def _dataset_config(
        self, dataset_id: int, method: str, method_config: dict[str, Any] | None, settings: dict[str, Any]
    ) -> tuple[Any, TrainConfig]:
        """A stored dataset's row and the validated config of a run on it (plan and forecast)."""
        row = datasets.get(self.db, dataset_id)
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        cfg = TrainConfig(data=row.path, method=method, method_config=dict(method_config or {}), **settings)
        validate(cfg)
        return row, cfg

    def device_info(self) -> DeviceInfo:
        """Where jobs will train: {device, gpus, name, precision}."""
        import torch

        from backend.training.runtime import precision_line

        if torch.cuda.is_available():
            return {
                "device": "cuda",
                "gpus": torch.cuda.device_count(),
                "name": torch.cuda.get_device_name(0),
                "precision": precision_line("cuda"),
            }
        return {
            "device": "cpu",
            "gpus": 0,
            "name": f"CPU ({os.cpu_count()} cores)",
            "precision": precision_line("cpu"),
        }
