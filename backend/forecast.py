"""How long a run will take and how much memory it will need, before it is launched.

Time comes from tokens, not rows: an epoch costs the *padded* tokens of its batches (what
the model really processes) divided by this machine's throughput for the model and method.

* The padded tokens are simulated from the dataset's own token lengths (a sample), cut at
  the run's max length, batched the way the run will batch them (length-grouped with the
  very sampler training uses, or random).
* The throughput (padded tokens per second, training) is calibrated from finished runs of
  the same model, method, device and precision (their summaries record it); without such
  a run, from a short measurement of a few training steps (``measure_throughput`` in the
  service) or, failing that, from the nearest method on this machine.

Memory comes from the model's size and what training keeps per parameter (weights, the
trainable ones' gradients and two AdamW moments) plus activations, which grow with batch
size x padded length x width x depth. The activation coefficient is calibrated from the
peak memory of finished runs as well.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from backend.data.batching import length_grouped_order

BYTES = {"none": 4.0, "8bit": 1.0, "4bit": 0.5}  # per frozen base weight
EVAL_SPEEDUP = 3.0  # a forward pass without gradients vs a training step, per token
PROCESS_BASE_MB = 650.0  # python + torch + transformers + tokenizer, measured on this code base
ACTIVATION_BYTES = 34.0  # per (row x token x hidden x layer) kept for the backward: a fit, see calibrate
# With gradient checkpointing a layer keeps only its input (one fp32 hidden state) for the
# backward; the full activations exist for one layer at a time, while it is recomputed.
CHECKPOINT_BYTES = 4.0


def padded_tokens(
    lengths: Sequence[int], rows: int, batch_size: int, max_length: int, grouped: bool, seed: int = 0
) -> float:
    """Padded tokens of one training epoch over ``rows`` rows whose lengths look like
    ``lengths`` (a sample), batched as the run will batch them."""
    if not lengths or rows <= 0:
        return 0.0
    cut = [min(int(n), max_length) for n in lengths]
    order = list(range(len(cut)))
    gen = torch.Generator().manual_seed(seed)
    if grouped:
        order = length_grouped_order(cut, batch_size, gen)
    else:
        order = torch.randperm(len(cut), generator=gen).tolist()
    total = 0
    for start in range(0, len(order), batch_size):
        batch = [cut[i] for i in order[start : start + batch_size]]
        total += max(batch) * len(batch)
    return total * rows / len(cut)


def eval_padded_tokens(lengths: Sequence[int], rows: int, max_length: int, batch_size: int = 64) -> float:
    """Padded tokens of one evaluation pass (sorted by length, as evaluation runs)."""
    if not lengths or rows <= 0:
        return 0.0
    cut = sorted(min(int(n), max_length) for n in lengths)
    total = sum(
        max(cut[s : s + batch_size]) * len(cut[s : s + batch_size]) for s in range(0, len(cut), batch_size)
    )
    return total * rows / len(cut)


def calibrated_throughput(history: Sequence[float]) -> float | None:
    """Padded training tokens per second from finished runs' figures (the median: one run
    slowed by a neighbour does not move it)."""
    usable = [t for t in history if t and t > 0 and math.isfinite(t)]
    return statistics.median(usable) if usable else None


@dataclass(frozen=True)
class ModelShape:
    """The few facts of a model and method the memory estimate needs."""

    total_params: int
    trainable_params: int
    hidden_size: int
    num_layers: int
    quant: str = "none"
    checkpointed: bool = False  # gradient checkpointing: see CHECKPOINT_BYTES

    @property
    def activation_layers(self) -> float:
        """Layers' worth of ``ACTIVATION_BYTES`` activations held at the peak of a step."""
        if not self.checkpointed:
            return float(self.num_layers)
        return 1.0 + self.num_layers * CHECKPOINT_BYTES / ACTIVATION_BYTES


def memory_mb(
    shape: ModelShape,
    batch_size: int,
    longest: int,
    activation_bytes: float = ACTIVATION_BYTES,
    base_mb: float = PROCESS_BASE_MB,
) -> float:
    """Peak memory of training: the process, the weights, what the optimizer keeps for the
    trainable ones (fp32 gradient + two AdamW moments) and one batch's activations at the
    longest padded length (the sampler puts the longest batch first, so the peak comes early)."""
    frozen = shape.total_params - shape.trainable_params
    weights = frozen * BYTES.get(shape.quant, 4.0) + shape.trainable_params * 4.0
    optimizer = shape.trainable_params * 12.0
    activations = activation_bytes * batch_size * longest * shape.hidden_size * shape.activation_layers
    return base_mb + (weights + optimizer + activations) / 2**20


def memory_by_quant(
    shape: ModelShape, batch_size: int, longest: int, quantizable: bool
) -> dict[str, float | None]:
    """Training peak (MB) with the base in fp32 (``none``), ``8bit`` and ``4bit``: the model
    picker's quick estimate, at the longest length a batch may reach. None where the method
    cannot train on a quantized base (full fine-tuning trains the base itself)."""
    return {
        quant: memory_mb(replace(shape, quant=quant), batch_size, longest)
        if quant == "none" or quantizable
        else None
        for quant in BYTES
    }


def fit_base_mb(samples: Sequence[tuple[ModelShape, int, int, float]]) -> float | None:
    """The process's own memory (python, libraries, the data, the search's candidate copies)
    that makes :func:`memory_mb` meet finished runs' measured peaks: (shape, batch size,
    longest length, peak MB) each; the median of their solutions. It grows with what the
    worker imports, so it is measured here rather than written down."""
    solved = [peak - memory_mb(shape, batch, longest, base_mb=0.0) for shape, batch, longest, peak in samples]
    usable = [b for b in solved if b > 0]
    return statistics.median(usable) if usable else None


@dataclass(frozen=True)
class Forecast:
    seconds_per_epoch: float
    eval_seconds: float
    search_seconds: float
    total_seconds: float
    peak_mb: float
    throughput: float  # padded training tokens per second assumed
    source: str  # where the throughput came from, in words


def forecast_run(
    *,
    train_tokens: float,
    eval_tokens: float,
    epochs: int,
    throughput: float,
    source: str,
    search_share: float,
    peak_mb: float,
    eval_throughput: float | None = None,
    overhead_seconds: float = 0.0,
    layer_share: float = 1.0,
) -> Forecast:
    """Put the pieces together: epochs x (training + evaluation), the learning-rate search
    (``search_share`` of the planned training time: its budget, or what finished runs of the
    method really spent, since short runs spend more than the budget on its minimum steps),
    and the fixed costs (building the model, encoding the data, checkpoints, the final pass).

    ``layer_share``: the share of the layers each epoch computes ("Train top layers" N of L:
    N / L). The layers below run once, without gradients, over the training and evaluation
    rows (the cache), and every epoch then costs that share of an all-layer epoch (measured:
    0.318x for LoRA on the top 2 of MiniLM's 6 layers, bench/SPEED.md)."""
    full_epoch = train_tokens / throughput
    full_evals = eval_tokens / (eval_throughput or throughput * EVAL_SPEEDUP)
    per_epoch, evals = full_epoch * layer_share, full_evals * layer_share
    cache_pass = (1 - layer_share) * (full_epoch / EVAL_SPEEDUP + full_evals)
    search = search_share * full_epoch * epochs
    total = epochs * (per_epoch + evals) + cache_pass + search + overhead_seconds
    return Forecast(per_epoch, evals, search, total, peak_mb, throughput, source)


def fits(peak_mb: float, available_mb: float, margin: float = 0.9) -> bool:
    """Whether a forecast peak leaves room (10% margin: the forecast aims at ±15%)."""
    return peak_mb <= margin * available_mb


def available_mb(device: str) -> float:
    """What a run may use: the memory of GPU 0 on ``cuda``, else the machine's RAM."""
    if device == "cuda":
        return torch.cuda.get_device_properties(0).total_memory / 2**20
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20


def sample_token_lengths(
    path: str, text: str, label: str, pair: str | None, tokenizer: Any, rows: int = 2_000
) -> list[int]:
    """Token lengths (special tokens included) of a seeded sample of a stored dataset's rows,
    with the tokenizer of the model that will train: what the forecast batches."""
    from backend.data.check import usable_rows
    from backend.data.mapping import ColumnMapping
    from backend.data.read import read_table
    from backend.data.sampling import sample_indices

    usable = usable_rows(read_table(path), ColumnMapping(text, label, pair), Path(path).name)
    picked = sample_indices(len(usable.texts), rows)
    texts = [usable.texts[i] for i in picked]
    pairs = [usable.pairs[i] for i in picked] if usable.pairs is not None else None
    if not texts:
        return []
    encoded = tokenizer(texts, pairs, truncation=False, verbose=False)
    return [len(ids) for ids in encoded["input_ids"]]


def padded_throughput(summary: dict[str, Any]) -> float | None:
    """Padded training tokens per second from a finished run's summary: its tokens/s count
    real tokens over the epochs' own seconds (evaluation and the learning-rate search left
    out), and the padding share turns them into what the model processed."""
    real, padding = summary.get("tokens_per_second"), summary.get("padding_share")
    if not real or padding is None or padding >= 1:
        return None
    return real / (1 - padding)


def memory_advice(shape: ModelShape, batch_size: int, longest: int, setting: int) -> str:
    """The setting to change when a run will not fit: whatever holds the most memory
    (``batch_size``: rows in the largest batch; ``setting``: the Batch size as set)."""
    activations = memory_mb(shape, batch_size, longest) - memory_mb(shape, batch_size, longest, 0.0)
    frozen = (shape.total_params - shape.trainable_params) * BYTES.get(shape.quant, 4.0) / 2**20
    optimizer = shape.trainable_params * 16.0 / 2**20
    biggest = max(activations, frozen, optimizer)
    if biggest == activations:
        return f"lower Batch size (now {setting}) or Max length (its longest batch: {longest} tokens)"
    if biggest == optimizer and shape.trainable_params >= shape.total_params // 2:  # every weight trains
        return (
            "train fewer weights: a parameter-efficient method (LoRA, an adapter) instead of full fine-tuning"
        )
    return "load the base model in 8-bit or 4-bit (Quantization), or pick a smaller model"
