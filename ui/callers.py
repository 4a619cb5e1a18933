"""What the endpoints know of a caller: whether it is on this machine, and its JSON.

Callers on this machine may see server details (tracebacks, paths, pids); the rest get
redacted results (``ui.exposure``). Ids come as JSON numbers (or strings) and must be whole;
results go out with string dict keys, as JSON has them.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.context import LocalContext

from backend.errors import ConfigError
from ui.exposure import is_local_request


def caller_is_local(request: gr.Request | None = None) -> bool:
    """True when the caller may see server details (tracebacks, paths, pids).

    ``request`` is what gr.api passes; tab handlers pass none, so Gradio's record of the
    event being handled is asked instead. No event at all: an in-process caller (a test,
    a script), local by definition. An event without a request fails closed.
    """
    request = request or LocalContext.request.get(None)
    if request is None:
        return not LocalContext.in_event_listener.get(False)
    return is_local_request(request)


def as_id(value: Any, what: str) -> int:
    """A row id from an API caller: a whole number, else a ConfigError (not a traceback)."""
    try:
        if isinstance(value, bool) or float(value) != int(value):
            raise ValueError
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{what} must be a whole number (an id), not {value!r}") from None


def str_keys(value: Any) -> Any:
    """``value`` with every dict key a string: JSON (and Gradio's encoder) needs that."""
    if isinstance(value, dict):
        return {str(k): str_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [str_keys(v) for v in value]
    return value
