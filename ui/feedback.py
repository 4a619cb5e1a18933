"""How the UI tells a person that something went wrong: one line, never a traceback.

Backend problems a user can fix arrive as :class:`WorkbenchError` with a message
that says what to do; the UI shows it inline (a Markdown line) and as a toast.
Anything else is a bug: the full traceback goes to the server log, and the page
gets a one-line summary so the person is not left with a spinner.
"""

from __future__ import annotations

import logging

import gradio as gr

from backend.errors import WorkbenchError

log = logging.getLogger("ui")

WARNING = "⚠️"
OK = "✓"


def problem(exc: Exception, doing: str, *, toast: bool = True) -> str:
    """The inline message for ``exc`` raised while ``doing`` (e.g. "reading the file").

    ``toast=False`` for messages refreshed on every slider move, where a pop-up per
    move would be noise.
    """
    if isinstance(exc, WorkbenchError):
        text = str(exc)
    else:
        log.exception("unexpected error while %s", doing)
        text = f"Unexpected error while {doing}: {type(exc).__name__}: {exc}. The server log has details."
    if toast:
        gr.Warning(text)
    return f"{WARNING} {text}"


def done(text: str) -> str:
    """An inline success line."""
    return f"{OK} {text}"
