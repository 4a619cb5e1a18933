"""The Workbench's catalogue: base models, methods and settings (with metadata), plans, device."""

from __future__ import annotations

import os
import typing
from typing import Any

from backend.catalogue import list_models
from backend.errors import ConfigError
from backend.knobs import fields_info
from backend.methods import registry
from backend.tasks import registry as tasks
from backend.training.config import CHECKPOINTING, TrainConfig, validate
from jobs import datasets
from service.api_state import WorkbenchState
from service.records import (
    DeviceInfo,
    FieldInfo,
    MethodInfo,
    ModelFacts,
    ParameterCount,
    RunPlan,
    TaskInfo,
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
                # the tasks it cannot train, each with why (``MethodSpec.refuses_task``)
                "refused_tasks": {t.key: why for t in tasks.all_tasks() if (why := s.task_refusal(t))},
            }
            for s in registry.all_methods()
        ]

    def list_tasks(self) -> list[TaskInfo]:
        """Every task with the form fields its own settings need (none for most)."""
        return [
            {
                "key": t.key,
                "label": t.label,
                "description": t.description,
                "fields": _field_info(t.settings_cls),
                "roles": [
                    {
                        "key": r.key,
                        "slot": r.slot,
                        "label": r.label,
                        "help": r.help,
                        "option": r.option,
                        "required": r.required,
                    }
                    for r in t.roles
                ],
            }
            for t in tasks.all_tasks()
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

    def model_facts(
        self,
        model: str | None = None,
        method: str = registry.DEFAULT,
        method_config: dict[str, Any] | None = None,
        *,
        batch_size: int = 32,
        max_length: int = 128,
        num_labels: int = 2,
        gradient_checkpointing: str = "auto",
    ) -> ModelFacts:
        """What the model picker shows for ``model`` (None: the default): its size, encoder or
        decoder, the memory a run of ``method`` at this batch size and max length would need
        with the base in fp32, 8-bit and 4-bit (a quick estimate), and whether that fits this
        machine. A hub id is looked up on the hub; offline that raises a ModelError saying the
        model needs internet. The first use of an offline model installs it (SmolLM2: ~30 s).
        ``gradient_checkpointing``: the setting ("auto", "on", "off"), as a run would resolve it."""
        import torch

        from backend import forecast as fc
        from backend.catalogue import model_info
        from backend.training.params import count_parameters  # deferred: torch, for start-up
        from backend.training.runtime import use_checkpointing

        check_fact_inputs(int(batch_size), int(max_length), int(num_labels), gradient_checkpointing)
        name = model or self.list_models()[0]
        labels = tuple(str(i) for i in range(num_labels))
        with self._lock:
            info = model_info(name, self.settings.models_cache)
            counted = count_parameters(name, method, method_config, labels, str(self.settings.models_cache))
        spec = registry.get(method)
        layers = 1 if spec.probes_layers else info.num_layers  # a probe's features need no backward
        checkpointed = not spec.probes_layers and use_checkpointing(
            gradient_checkpointing, spec.gradient_checkpointing, counted.base
        )
        shape = fc.ModelShape(
            counted.total, counted.trainable, info.hidden_size, layers, checkpointed=checkpointed
        )
        memory = fc.memory_by_quant(shape, int(batch_size), int(max_length), spec.quantizable)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        available = fc.available_mb(device)
        fits = {quant: mb is not None and fc.fits(mb, available) for quant, mb in memory.items()}
        facts: ModelFacts = {
            "model": name,
            "hub_id": info.hub_id,
            "architecture": "decoder" if info.is_decoder else "encoder",
            "model_type": info.model_type,
            "total_params": counted.base,
            "trainable_params": counted.trainable,
            "memory_mb": memory,
            "device": device,
            "available_mb": available,
            "fits": fits,
            "gradient_checkpointing": checkpointed,
            "text": "",
        }
        facts["text"] = facts_text(facts, spec.label, int(batch_size), int(max_length))
        return facts

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


QUANT_NAMES = {"none": "fp32", "8bit": "8-bit", "4bit": "4-bit"}
MAX_FACT_LABELS = 10_000  # a label list is built for the count: a caller's number must not be huge


def check_fact_inputs(batch_size: int, max_length: int, num_labels: int, checkpointing: str = "auto") -> None:
    """The shape a caller asks about, within the training settings' own ranges (any caller can
    reach ``/model_facts``: a huge number must be an error, not a huge list)."""
    if checkpointing not in CHECKPOINTING:
        raise ConfigError(
            f"gradient checkpointing must be one of {', '.join(CHECKPOINTING)}, not {checkpointing!r}"
        )
    for name, value, low, high in (
        ("batch size", batch_size, 1, 4096),
        ("max length", max_length, 8, 8192),
        ("number of labels", num_labels, 2, MAX_FACT_LABELS),
    ):
        if not low <= value <= high:
            raise ConfigError(f"{name} must be between {low} and {high}, not {value}")


def params_text(n: int) -> str:
    """134,516,160 -> "134.5M"."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def facts_text(facts: ModelFacts, method_label: str, batch_size: int, max_length: int) -> str:
    """One Markdown line: size and kind, then memory by base precision against this machine."""
    where = "GPU memory" if facts["device"] == "cuda" else "RAM"
    parts = []
    for quant, mb in facts["memory_mb"].items():
        name = QUANT_NAMES[quant]
        if mb is None:
            parts.append(f"{name}: not with {method_label}")
        else:
            verdict = "fits" if facts["fits"][quant] else "**does not fit**"
            parts.append(f"{name} {mb / 1024:.1f} GB ({verdict})")
    how = " with gradient checkpointing" if facts["gradient_checkpointing"] else ""
    return (
        f"**{params_text(facts['total_params'])} parameters**, {facts['architecture']} "
        f"({facts['model_type']}) · {method_label} at batch {batch_size} × {max_length} tokens{how} "
        "needs about "
        f"{', '.join(parts)} · this machine: {facts['available_mb'] / 1024:.0f} GB {where}"
    )
