"""Give back what a quantized load leaves resident: the weights file's pages and freed heap.

transformers reads every fp32 weight of a quantized load from the memory-mapped safetensors
file and keeps the unquantized ones (embeddings, norms) as zero-copy views of that map. The
views keep the whole map alive, and the pages quantization read stay in the process's RSS:
SmolLM2-135M in 4-bit held 405 MB of its file's pages beside 159 MB of weights, and its peak
RSS in training was 1.07x the fp32 run's (bench/MODELS.md). Copying the few unquantized
tensors out of the map lets it close; ``malloc_trim`` then returns the quantization's freed
scratch memory (~180 MB) that glibc would otherwise keep for reuse.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from typing import Any

QUANTIZED_PARAMS = ("Params4bit", "Int8Params")  # bitsandbytes' own storage: never a file view


def detach_from_weights_file(model: Any) -> int:
    """Copy every unquantized parameter and buffer into memory of its own; returns bytes copied."""
    copied = 0
    for module in model.modules():
        for tensor in [*module.parameters(recurse=False), *module.buffers(recurse=False)]:
            if tensor is None or type(tensor).__name__ in QUANTIZED_PARAMS:
                continue
            tensor.data = tensor.data.clone()
            copied += tensor.numel() * tensor.element_size()
    release_heap()
    return copied


def release_heap() -> bool:
    """Collect garbage and hand freed heap back to the OS (glibc only; False elsewhere)."""
    gc.collect()
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    trim = getattr(ctypes.CDLL(libc_name), "malloc_trim", None)
    return bool(trim(0)) if trim is not None else False
