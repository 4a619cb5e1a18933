"""Where and how a run executes: device choice, seeding, peak memory."""

from __future__ import annotations

import random
import resource

import numpy as np
import torch


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
