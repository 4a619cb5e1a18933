"""A run's set-up before the loop: the model built for its method, and its "auto" settings
turned into numbers (the learning-rate search, the epoch plan)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from backend.catalogue import ModelInfo, head_module_names, load_classifier, load_config
from backend.data.batching import Encoded
from backend.methods import registry
from backend.methods.base import BuildContext
from backend.quant_workarounds import disable_cpu_bf16_4bit
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training import checkpoint
from backend.training.autotune import EpochPlan, describe_search, plan_epochs, search_basis_samples
from backend.training.callbacks import Callback
from backend.training.config import AUTO, TrainConfig
from backend.training.lr_search_model import search_model_lr
from backend.training.outcome import RunContext
from backend.training.params import count, count_parameters
from backend.training.runtime import (
    enable_checkpointing,
    pick_device,
    plain_kernels,
    resolve_precision,
    seed_everything,
    use_checkpointing,
)


def checkpointing_on(model: Any) -> bool:
    """Whether gradient checkpointing is on (PEFT wrappers pass the attribute through)."""
    return bool(getattr(model, "is_gradient_checkpointing", False))


# transformers' config names for the dropout on attention probabilities (BERT-likes;
# DistilBERT, BART and Llama-likes; GPT-2).
ATTENTION_DROPOUT_KEYS = ("attention_probs_dropout_prob", "attention_dropout", "attn_pdrop")


def training_attention(info: ModelInfo, device: torch.device, quant: str) -> str | None:
    """The attention implementation to train with: "eager" on the CPU for a model that
    drops attention probabilities, else None (transformers' default, SDPA). With dropout,
    SDPA on the CPU runs its math path. On transformers 4.57 the eager attention's
    ``nn.Dropout`` became the fast one (``cpu_setup``): a LoRA step on MiniLM, batch 32 x 38
    tokens, 175 -> 143 ms. transformers 5 drops attention probabilities with torch's functional
    dropout in both, yet eager stayed the faster: a full fine-tuning step on MiniLM, 32 x 64
    tokens, fp32, 3.79-3.97 s against 4.18-4.19 s for SDPA (/tmp timing beside a bench, issue
    45). Evaluation took the same time either way. Not on a quantized base: 8-bit matmuls
    quantize their inputs too, so the two implementations' float-rounding differences would
    change what the export (SDPA on reload) predicts beyond the reload check's tolerance."""
    if device.type != "cpu" or quant != "none" or plain_kernels():
        return None
    _, config = load_config(info.path)
    dropout = max(float(getattr(config, key, 0.0) or 0.0) for key in ATTENTION_DROPOUT_KEYS)
    return "eager" if dropout > 0 else None


def build_model(
    cfg: TrainConfig,
    info: ModelInfo,
    label_names: list[str],
    pad_token_id: int | None = None,
    task: Task | None = None,
    targets: list[Any] | None = None,
) -> Any:
    """The base model with the task's head, wrapped by the method (``targets``: the training
    targets a task may start its head from)."""
    spec = registry.get(cfg.method)
    spec.check_model(info)
    attention = training_attention(info, pick_device(cfg.device), cfg.quant)
    task = task or tasks.get(None)
    base = load_classifier(
        info, label_names, cfg.quant, pad_token_id, attention, task.model_kwargs(label_names), task.auto_class
    )
    if targets:
        for name in head_module_names(info):
            if (module := getattr(base, name, None)) is not None:
                task.start_head(module, targets)
    size = base.num_parameters()  # the base alone, before the method wraps it
    model = spec.build(base, cfg.method_settings(), BuildContext(info, label_names, task.peft_task_type))
    if cfg.quant == "4bit":  # again: a method may have swapped in 4-bit layers of its own (adapters)
        disable_cpu_bf16_4bit(model)
    if use_checkpointing(cfg.gradient_checkpointing, spec.gradient_checkpointing, size):
        enable_checkpointing(model)
    if cfg.quant == "none":
        model.to(pick_device(cfg.device))
    return model


def resolve_auto(
    cfg: TrainConfig,
    model: Any,
    train_enc: Encoded,
    label_names: list[str],
    device: torch.device,
    cb: Callback,
    resume_from: Path | None,
    task: Task | None = None,
) -> tuple[TrainConfig, EpochPlan, dict[str, Any] | None]:
    """Turn "auto" epochs and learning rate into numbers (a typed value always wins).

    A resumed run takes the numbers its checkpoint recorded, so it never searches twice.
    """
    plan = plan_epochs(cfg, len(train_enc))
    resolved = checkpoint.resolved_settings(resume_from) if resume_from else None
    if resolved is not None:
        plan = EpochPlan(int(resolved["epochs"]), plan.steps_per_epoch, plan.auto)
        return replace(cfg, epochs=plan.epochs, lr=resolved["lr"]), plan, resolved.get("lr_search")
    search = None
    if cfg.lr == AUTO:
        search = search_model_lr(
            model,
            train_enc,
            registry.get(cfg.method).learning_rates(cfg.method_settings()),
            planned_samples=search_basis_samples(plan, len(train_enc)),
            label_names=label_names,
            device=device,
            batch_size=cfg.batch_size,
            weight_decay=cfg.weight_decay,
            max_grad_norm=cfg.max_grad_norm,
            seed=cfg.seed,
            cb=cb,
            precision=resolve_precision(cfg.precision, device, cfg.quant),
            group_by_length=cfg.group_by_length,
            prior=registry.get(cfg.method).default_lr,
            lr_scales=cfg.lr_scales,
            task=task,
        )
        cb.on_log(describe_search(search))
        seed_everything(cfg.seed)  # the run's own randomness does not depend on the search
    if plan.auto:
        cb.on_log(f"epochs auto: {plan.describe()}")
    return replace(cfg, epochs=plan.epochs, lr=search["chosen"] if search else cfg.lr), plan, search


def count_run_parameters(ctx: RunContext, model: Any) -> tuple[int, int]:
    """(trainable in the live model, total of the base + method, counted without weights)."""
    cfg = ctx.cfg
    counts = count_parameters(
        cfg.model,
        cfg.method,
        cfg.method_config,
        tuple(ctx.data.label_names),
        str(ctx.models_cache) if ctx.models_cache else None,
    )
    return count(model).trainable, counts.total
