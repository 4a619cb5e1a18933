"""Which Endpoints methods are public, under which names and concurrency, and how their
errors reach API callers (``register``, called inside the Blocks context)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import gradio as gr

from backend.errors import WorkbenchError
from ui.endpoints import Endpoints


def _as_api_error(fn: Callable[..., Any], endpoints: Endpoints) -> Callable[..., Any]:
    """API callers get the backend's message as a gr.Error (an AppError in gradio_client);
    callers from other machines get it with server paths cut to file names."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except WorkbenchError as exc:
            raise gr.Error(endpoints.shown(str(exc)), print_exception=False) from None

    return call


PUBLIC = (
    "upload_dataset",
    "load_example",
    "datasets",
    "delete_dataset",
    "launch",
    "jobs",
    "job",
    "cancel",
    "compare",
    "export",
    "report",
    "launch_sweep",
    "sweeps",
    "sweep",
    "cancel_sweep",
    "predictions",
    "predictions_csv",
    "disagreements",
    "calibration",
    "evaluate",
    "evaluations",
    "model_facts",
)


# Endpoints that read or write whole files (parse and validate a dataset, build a zip). They
# share two slots: run 50 at once and their CPU work starves the server's event loop, so
# callers time out before their request is even queued (bench/faults.py: 13 of 50 parallel
# /launch calls got ReadTimeout though their jobs were recorded). Queued, each gets its answer.
HEAVY = (
    "upload_dataset", "load_example", "launch", "launch_sweep", "export", "compare", "evaluate",
    "predictions_csv", "report",
)  # fmt: skip
HEAVY_SLOTS = 2


def register(endpoints: Endpoints) -> None:
    """Publish the endpoints (call inside the Blocks context)."""
    for name in PUBLIC:
        # Reads are cheap and may run side by side; the Workbench locks what must not (model
        # loading).
        limit = {"concurrency_limit": HEAVY_SLOTS, "concurrency_id": "heavy"} if name in HEAVY else {}
        gr.api(
            _as_api_error(getattr(endpoints, name), endpoints),
            api_name=name,
            **({"concurrency_limit": None} | limit),
        )
