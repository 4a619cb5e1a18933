"""A task of a test's own in the registry for the length of a ``with`` block, then taken out,
so every other test sees the registry as the app has it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from backend.tasks import registry
from backend.tasks.base import Task


@contextlib.contextmanager
def registered(task: Task) -> Iterator[Task]:
    registry.register(task)
    try:
        yield task
    finally:
        registry._TASKS.remove(task)
