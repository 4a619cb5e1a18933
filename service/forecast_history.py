"""What finished runs on this machine say about the next one: the figures the forecast
calibrates on, each the median over the runs that recorded it (one run slowed by a
neighbour does not move a median). Pure functions of run summaries (``run_training``'s dict).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any


def _median(values: Iterable[float | None]) -> float | None:
    usable = [v for v in values if v is not None and v > 0]
    return statistics.median(usable) if usable else None


def search_share(summaries: Iterable[dict[str, Any]]) -> float | None:
    """The learning-rate search's time over the planned training time. Short runs spend
    well above the search's budget (every candidate trains its minimum steps), so the
    method's own history says more than the budget does."""

    def share(s: dict[str, Any]) -> float | None:
        epochs = s.get("epoch_seconds") or []
        if not s.get("lr_search_seconds") or not epochs or not s.get("epochs"):
            return None
        return s["lr_search_seconds"] / (statistics.mean(epochs) * s["epochs"])

    return _median(share(s) for s in summaries)


def eval_throughput(summaries: Iterable[dict[str, Any]]) -> float | None:
    """Padded evaluation tokens per second (runs that recorded their evaluation passes)."""

    def rate(s: dict[str, Any]) -> float | None:
        seconds = s.get("eval_seconds") or []
        if not seconds or not s.get("eval_tokens") or sum(seconds) <= 0:
            return None
        return s["eval_tokens"] * len(seconds) / sum(seconds)

    return _median(rate(s) for s in summaries)


def overhead_seconds(summaries: Iterable[dict[str, Any]]) -> float | None:
    """A run's time outside its search, epochs and evaluations: building the model, encoding
    the data, checkpoints and the final pass."""

    def rest(s: dict[str, Any]) -> float | None:
        if not s.get("train_seconds") or not s.get("epoch_seconds") or "eval_seconds" not in s:
            return None
        spent = (s.get("lr_search_seconds") or 0.0) + sum(s["epoch_seconds"]) + sum(s["eval_seconds"])
        return s["train_seconds"] - spent

    return _median(rest(s) for s in summaries)
