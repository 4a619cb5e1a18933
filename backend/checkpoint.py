"""End-of-epoch checkpoints, so a failed or cancelled run can resume where it stopped.

Only what training changes is stored: trainable weights (safetensors), optimizer and
scheduler state (loaded back with ``weights_only=True``), the best epoch so far, history.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file, save_file

from backend.errors import ConfigError

if TYPE_CHECKING:
    from backend.train import Fitter


def _trainable(fitter: Fitter) -> dict[str, torch.Tensor]:
    return {n: p.detach().cpu().contiguous() for n, p in fitter.model.named_parameters() if p.requires_grad}


def save(directory: Path, fitter: Fitter, epoch: int) -> None:
    """Write the checkpoint for ``epoch``; the state file goes last so a crash mid-write is ignored."""
    directory.mkdir(parents=True, exist_ok=True)
    save_file(_trainable(fitter), str(directory / "trainable.safetensors"))
    if fitter.best_state is not None:
        save_file(
            {k: v.contiguous() for k, v in fitter.best_state.items()}, str(directory / "best.safetensors")
        )
    torch.save(
        {"optimizer": fitter.optimizer.state_dict(), "scheduler": fitter.scheduler.state_dict()},
        directory / "optimizer.pt",
    )
    state = {
        "epoch": epoch,
        "step": fitter.step,
        "best": fitter.best,
        "history": fitter.history,
        "epoch_seconds": fitter.epoch_seconds,
        "resolved": fitter.resolved,  # what "auto" chose: a resume trains on with the same numbers
    }
    tmp = directory / "state.json.tmp"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, directory / "state.json")


def last_epoch(directory: Path) -> int | None:
    """The epoch a checkpoint folder holds, or None when it holds none."""
    path = Path(directory) / "state.json"
    return json.loads(path.read_text())["epoch"] if path.is_file() else None


def resolved_settings(directory: Path) -> dict[str, Any] | None:
    """The learning rate, epochs and search record the checkpointed run trained with."""
    path = Path(directory) / "state.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("resolved") or None


def load(directory: Path, fitter: Fitter) -> int:
    """Restore ``fitter`` from ``directory``; returns the epoch the checkpoint completed."""
    directory = Path(directory)
    if last_epoch(directory) is None:
        raise ConfigError(f"no checkpoint to resume from in {directory}")
    state = json.loads((directory / "state.json").read_text())
    weights = load_file(str(directory / "trainable.safetensors"))
    fitter.model.load_state_dict(weights, strict=False)
    opt = torch.load(directory / "optimizer.pt", weights_only=True)
    fitter.optimizer.load_state_dict(opt["optimizer"])
    fitter.scheduler.load_state_dict(opt["scheduler"])
    fitter.step, fitter.best, fitter.history = state["step"], state["best"], state["history"]
    fitter.epoch_seconds = state.get("epoch_seconds", [])
    if (directory / "best.safetensors").is_file():
        fitter.best_state = load_file(str(directory / "best.safetensors"))
    return int(state["epoch"])
