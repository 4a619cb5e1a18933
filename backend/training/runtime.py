"""Where and how a run executes: device choice, seeding, precision, gradient checkpointing,
the optimizer's kernel, peak memory."""

from __future__ import annotations

import contextlib
import os
import random
import resource
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from backend.training.fast_dropout import use_fast_dropout

# Gradient checkpointing "auto" turns on above this many base-model parameters (SmolLM2-135M
# and up): smaller encoders fit without it, and recomputing would only cost them time.
CHECKPOINTING_PARAMS = 100_000_000
# Set only by bench/speed.py for the old loop and the "alone" rows: torch's CPU dropout, its
# per-tensor AdamW and transformers' default attention, as a hand-written loop gets them.
PLAIN_KERNELS_ENV = "WORKBENCH_PLAIN_KERNELS"
# "0" makes this process (and the workers it starts) act as on a CPU without native bf16: the
# fp32 path that AVX2-only machines take, testable on one with AVX-512 BF16 (`make test-fp32`).
CPU_BF16_ENV = "WORKBENCH_CPU_BF16"


def plain_kernels() -> bool:
    return bool(os.environ.get(PLAIN_KERNELS_ENV))


def lr_groups(
    named: Iterable[tuple[str, torch.nn.Parameter]], lr: float, scales: dict[str, float]
) -> list[dict[str, Any]]:
    """The trainable weights as optimizer groups: one whose name holds a key of ``scales`` learns
    at ``lr`` times that scale (a method's fact: ``MethodSpec.lr_scales``), the rest at ``lr``.
    The rest come first: the first group's rate is the one a run reports."""
    groups: dict[float, list[torch.nn.Parameter]] = {1.0: []}
    for name, p in named:
        if p.requires_grad:
            groups.setdefault(next((v for k, v in scales.items() if k in name), 1.0), []).append(p)
    return [{"params": ps, "lr": lr * scale, "lr_scale": scale} for scale, ps in groups.items() if ps]


def adamw(
    named: Iterable[tuple[str, torch.nn.Parameter]], lr: float, weight_decay: float, scales: dict[str, float]
) -> torch.optim.AdamW:
    """AdamW over the trainable weights in ``named``, grouped by ``lr_groups``, with the fused
    kernel. On the CPU torch's default updates one tensor at a time: 64-81 ms a step for all
    22.7M parameters of MiniLM-L6 against 14 ms fused (a quarter of a full fine-tuning step at
    batch 32)."""
    params = lr_groups(named, lr, scales)
    if not plain_kernels():
        try:
            return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)
        except RuntimeError:  # a device or dtype without the fused kernel
            pass
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def use_checkpointing(setting: str, method_can: bool, num_params: int) -> bool:
    """Whether a run trains with gradient checkpointing ("auto", "on" or "off")."""
    return method_can and (setting == "on" or (setting == "auto" and num_params > CHECKPOINTING_PARAMS))


def enable_checkpointing(model: Any) -> None:
    """Gradient checkpointing on a built model (PEFT and adapters wrappers pass it through).

    Non-reentrant: it gets gradients to the trainable weights inside a layer even when the
    layer's input needs none (frozen embeddings under LoRA, IA3 or adapters), so PEFT's
    ``enable_input_require_grads`` hook, which the old reentrant variant needs, is not needed.
    """
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def pick_device(pref: str) -> torch.device:
    if pref == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(pref)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def peak_gpu_mb(device: torch.device | str) -> float | None:
    """Peak GPU memory allocated by this process, or None off the GPU."""
    if torch.device(device).type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated() / 2**20, 1)


def cpu_has_bf16() -> bool:
    """Native bf16 arithmetic on this CPU (AVX-512 BF16 or AMX), read from /proc/cpuinfo.

    Without it bf16 is emulated and slower than fp32, so "auto" keeps fp32. Not Linux: no.
    ``WORKBENCH_CPU_BF16=0`` answers no whatever the CPU has.
    """
    if os.environ.get(CPU_BF16_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return False
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    lines = (line for line in text.splitlines() if line.startswith("flags"))
    flags = next((line.split(":", 1)[1].split() for line in lines), [])
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_precision(setting: str, device: torch.device | str, quant: str = "none") -> str:
    """The compute dtype of a run: "fp32", "bf16" or "fp16" (CUDA without bf16 only).

    Only the matrix products run in it (autocast); weights, optimizer state and the head
    stay fp32, so exports are the same fp32 files whatever the precision. A quantized base
    on the CPU always computes in fp32: bitsandbytes' CPU layers compute in fp32 anyway, and
    under bf16 autocast an 8-bit base left the trained model predicting up to 7e-4 away from
    the same files reloaded (measured), so the export would not be the model evaluated.
    """
    kind = torch.device(device).type
    if setting == "fp32" or kind not in ("cpu", "cuda") or (kind == "cpu" and quant != "none"):
        return "fp32"
    if kind == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if setting == "bf16":
        return "bf16"
    return "bf16" if cpu_has_bf16() else "fp32"


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager[Any]:
    """Autocast to ``precision`` on ``device``; fp32 is no autocast at all."""
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(torch.device(device).type, dtype=dtype)


def precision_line(device: torch.device | str) -> str:
    """What "auto" precision does here, for the device line of the UI."""
    kind = torch.device(device).type
    if kind == "cuda":
        return "bf16 autocast" if torch.cuda.is_bf16_supported() else "fp16 autocast + gradient scaling"
    if cpu_has_bf16():
        return "bf16 autocast (the CPU has native bf16)"
    return "fp32 (this CPU has no native bf16: AVX-512 BF16 or AMX)"


def cpu_setup(model: Any, device: torch.device, precision: str) -> str | None:
    """Before training on the CPU: dropout from random bits (torch's cost more than a layer's
    matmuls in bf16); returns a warning when bf16 is asked for but would be emulated."""
    if device.type != "cpu":
        return None
    if not plain_kernels():
        use_fast_dropout(model)
    if precision == "bf16" and not cpu_has_bf16():
        return (
            "warning: this CPU has no native bf16 (AVX-512 BF16 or AMX): bf16 is emulated and "
            "several times slower than fp32 here; precision 'auto' would train in fp32"
        )
    return None
