"""The export formats by key (``backend.artifacts.writer``): a duplicate key fails at import.
A task names the ones its runs get (``Task.exports``)."""

from __future__ import annotations

from backend.artifacts.merge import Merged
from backend.artifacts.write_card import ModelCard
from backend.artifacts.write_weights import Weights
from backend.artifacts.writer import Writer
from backend.errors import ConfigError
from backend.tasks.base import Task

_WRITERS: dict[str, Writer] = {}


def register(writer: Writer) -> None:
    if writer.key in _WRITERS:
        raise RuntimeError(f"export format '{writer.key}' registered twice")
    _WRITERS[writer.key] = writer


for _writer in (Weights(), ModelCard(), Merged()):
    register(_writer)


def get(key: str) -> Writer:
    if key not in _WRITERS:
        raise ConfigError(f"unknown export format '{key}'; known: {', '.join(_WRITERS)}")
    return _WRITERS[key]


def of(task: Task) -> tuple[Writer, ...]:
    """The formats a run of ``task`` gets, in the order they are written (a task naming a format
    that does not exist fails here, before any run of it writes anything)."""
    return tuple(get(key) for key in task.exports)
