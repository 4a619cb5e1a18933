"""Numbers as people read them, shared by the pages and the reports (the UI imports these)."""

from __future__ import annotations

DASH = "–"
METRIC_WORDS = {"macro_f1": "macro-F1"}  # metric keys as people write them in a line of text


def metric_word(name: str) -> str:
    """A metric's name in a line of text ("macro-F1"); any other: its key ("spearman")."""
    return METRIC_WORDS.get(name, name)


def duration(seconds: float | None) -> str:
    """``75`` -> "1m 15s"; None -> "–"."""
    if seconds is None:
        return DASH
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def size(n_bytes: float | None) -> str:
    """Bytes in B/KB/MB/GB (powers of 1024)."""
    if n_bytes is None:
        return DASH
    value = float(n_bytes)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.2f} GB"


def with_interval(value: float | None, interval: list[float] | None) -> str:
    """ "0.842 [0.811, 0.871]": a score with its 95% bootstrap interval (backend.significance);
    the score alone for a run from before intervals; "–" for none."""
    if value is None:
        return DASH
    if not interval:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"
