"""Workarounds for quantized (bitsandbytes) bases in the libraries that load and wrap them:
one place for what training, the probe's encoder and the export loader all apply."""

from __future__ import annotations

from typing import Any


def drop_cpu_device_map(model: Any) -> None:
    """Forget a quantized load's device map when it is the CPU alone.

    PEFT's prefix tuning looks for a GPU in ``hf_device_map`` to place its key/value cache
    and fails (StopIteration) on a CPU-only map; one device needs no map at all.
    """
    device_map = getattr(model, "hf_device_map", None)
    if device_map is not None and {str(v) for v in device_map.values()} <= {"cpu"}:
        del model.hf_device_map


def disable_cpu_bf16_4bit(model: Any) -> None:
    """bitsandbytes' CPU bf16 fast path breaks 4-bit train -> eval -> train; turn it off."""
    import bitsandbytes as bnb

    for module in model.modules():
        if isinstance(module, bnb.nn.Linear4bit):
            module.support_avx512bf16_for_cpu = False
