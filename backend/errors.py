"""Typed errors the backend raises for problems a user can fix.

The CLI prints them as one ``error: ...`` line with exit code 2; the UI shows the
message inline. Anything else is a bug or an environment failure (exit 1).
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class: a problem with the user's input or choices, with a message to act on."""


class DataError(WorkbenchError):
    """The dataset cannot be used as given (file, row, column, and what to do)."""


class ConfigError(WorkbenchError):
    """A training configuration is invalid or an unsupported combination."""


class ModelError(WorkbenchError):
    """A base model cannot be found or loaded (e.g. a hub id while offline)."""
