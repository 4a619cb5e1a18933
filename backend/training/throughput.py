"""Tokens per second and model FLOPs utilisation (MFU) of a training run.

MFU = the model's useful FLOPs per second / the device's peak. The FLOPs follow the usual
transformer estimate (Kaplan et al.; PaLM's MFU): a forward pass costs ~2 FLOPs per parameter
per token; the backward pass costs as much again for the activations' gradients, and once more
where the weights themselves get gradients (all of them in full fine-tuning, almost none with
a frozen base). Attention's sequence-length term is left out: it is small at these lengths.

The peak is *measured* here (a large matrix product in the run's precision), not read off a
spec sheet: a shared 2-core VM and a data-centre GPU both get an honest denominator.
"""

from __future__ import annotations

import time
from functools import cache

import torch


class Throughput:
    """Tokens through the model: real ones (the attention mask) and padded ones."""

    def __init__(self) -> None:
        self.real = 0
        self.padded = 0

    def add(self, batch: dict[str, torch.Tensor]) -> None:
        mask = batch.get("attention_mask")
        ids = batch["input_ids"]
        self.real += int(mask.sum()) if mask is not None else ids.numel()
        self.padded += ids.numel()

    def add_lengths(self, lengths: list[int]) -> None:
        """A batch known by its rows' lengths (padded to the longest)."""
        self.real += sum(lengths)
        self.padded += max(lengths, default=0) * len(lengths)


def computed_params(model: torch.nn.Module, cut: int | None = None) -> int:
    """N of the FLOPs estimate: the weights a token is multiplied by. Embedding tables are
    lookups (Kaplan et al. leave them out too), and layers below a cache cut do not run."""
    from backend.methods.layers import find_layer_list

    total = sum(p.numel() for p in model.parameters())
    tables = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding))
    skipped = 0
    if cut is not None:
        _, layers = find_layer_list(model)
        skipped = sum(p.numel() for layer in layers[:cut] for p in layer.parameters())
    return total - tables - skipped


def train_flops_per_token(computed: int, trainable_params: int) -> float:
    """Model FLOPs of one training token: forward 2N, activation gradients 2N, weight
    gradients 2x the trainable parameters (all N in full fine-tuning: the familiar 6N)."""
    return 4.0 * computed + 2.0 * min(trainable_params, computed)


@cache
def measured_peak_flops(device_type: str, precision: str) -> float:
    """FLOP/s of a 2048^3 linear layer under the run's autocast on this device (best of 3).

    Through the same kernels as the model (``F.linear`` under autocast), not a bare ``mm``:
    a CPU without native bf16 runs bf16 ``mm`` ~200x slower than its autocast linear.
    """
    from backend.training.runtime import autocast

    n = 2048
    a = torch.randn(n, n, device=device_type)
    w = torch.randn(n, n, device=device_type)
    best = float("inf")
    with torch.no_grad(), autocast(torch.device(device_type), precision):
        for _ in range(4):  # the first warms the kernels up
            if device_type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.nn.functional.linear(a, w)
            if device_type == "cuda":
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def throughput_summary(
    tokens: Throughput,
    train_seconds: float,
    computed: int,
    trainable_params: int,
    device_type: str,
    precision: str,
) -> dict[str, float | None]:
    """tokens/s, the share of padding, and MFU against the measured peak (None: no tokens)."""
    if tokens.real == 0 or train_seconds <= 0:
        return {"tokens_per_second": None, "padding_share": None, "model_tflops": None, "mfu": None}
    per_second = tokens.real / train_seconds
    achieved = per_second * train_flops_per_token(computed, trainable_params)
    return {
        "tokens_per_second": round(per_second, 1),
        "padding_share": round(1 - tokens.real / tokens.padded, 4),
        "model_tflops": round(achieved / 1e12, 4),
        "peak_tflops": round(measured_peak_flops(device_type, precision) / 1e12, 3),
        "mfu": round(achieved / measured_peak_flops(device_type, precision), 4),
    }
