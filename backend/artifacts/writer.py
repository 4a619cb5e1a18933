"""What an export format is: a writer, in its own file of ``backend.artifacts``, registered by
key in ``backend.artifacts.formats``. A task names the formats its runs get (``Task.exports``).

A writer puts its files into a finished run's folder (``write``: the trained weights, the model
card), or builds a download from the folder when someone asks for it (``export``: the merged
model). A sentence-transformers folder or a GGUF file is one more writer."""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from backend.errors import ConfigError
from backend.training.config import TrainConfig
from backend.training.outcome import RunOutcome


@dataclass(frozen=True)
class Finished:
    """A finished run as the writers see it: its folder (the common files, ``workbench.json``
    among them, are written first), what the runner handed back, and the folder's manifest."""

    out_dir: Path
    outcome: RunOutcome
    manifest: dict[str, Any]

    @property
    def cfg(self) -> TrainConfig:
        return self.outcome.cfg


class Writer(ABC):
    """One export format. ``write`` runs when a run finishes, in the order its task names the
    formats; ``export`` makes the format's download of a finished run folder on demand."""

    key: ClassVar[str]
    label: ClassVar[str]  # what a person gets, in words ("the merged model")

    def write(self, run: Finished) -> None:
        """This format's files in the run folder; nothing for a format made on demand."""
        return None

    def export(self, run_dir: Path, out_zip: Path) -> Path:
        """This format as a zip of its own, built from ``run_dir``; a format written with the run
        goes out in the run's zip (``backend.artifacts.export``)."""
        raise ConfigError(f"{self.label} is in the run's own zip; download that instead")
