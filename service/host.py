"""What the web server needs from below: the settings and the job supervisor of this process."""

from __future__ import annotations

from typing import Any

from backend.settings import Settings, apply_environment, positive_int

__all__ = ["Settings", "apply_environment", "positive_int", "start_supervisor"]


def start_supervisor(settings: Settings) -> Any:
    """Start this process's job supervisor (it claims queued jobs); returns it, for ``stop()``."""
    from jobs.supervisor import Supervisor  # deferred: torch-free, but SQLAlchemy is slow to import

    return Supervisor(settings).start()
