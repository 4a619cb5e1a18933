"""End-of-epoch checkpoints, so a failed or cancelled run can resume where it stopped.

Only what training changes is stored: trainable weights (safetensors), optimizer and
scheduler state (loaded back with ``weights_only=True``), the best epoch so far, history,
and the random number generators' states, so that on the CPU a resumed run is bit-identical
to one that was never interrupted.

Crash safety: a process can be SIGKILLed at any instruction (a cancel's grace period ends
that way), so a checkpoint is never changed in place. Layout of a checkpoint folder::

    checkpoint/
        LATEST            the name of the complete sub-folder to resume from ("epoch-0003")
        epoch-0003/       state.json, trainable.safetensors, best.safetensors, optimizer.pt,
                          rng.safetensors, rng.json

A save writes ``epoch-0004.tmp/``, fsyncs every file and the folder, renames it to
``epoch-0004/``, then replaces ``LATEST`` atomically; only then is ``epoch-0003/`` removed.
A kill at any point leaves ``LATEST`` naming a complete folder (or no ``LATEST`` at all
before the first save completes); leftovers of the interrupted save are ignored by readers
and swept by the next save.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from backend.durable import fsync_path, make_dir, replace_text, write_text
from backend.errors import ConfigError

if TYPE_CHECKING:
    from backend.training.loop import Fitter

POINTER = "LATEST"
STATE = "state.json"
PREFIX = "epoch-"
TMP = ".tmp"
# The files of the flat layout older versions wrote straight into the checkpoint folder.
LEGACY_FILES = (STATE, "trainable.safetensors", "best.safetensors", "optimizer.pt")


# ------------------------------------------------------------------ durable writes


def _switch_pointer(directory: Path, name: str) -> None:
    """Point ``LATEST`` at ``name``: readers see the old name or the new one, never a mix."""
    replace_text(directory / POINTER, name + "\n", TMP)


def _sweep(directory: Path, keep: set[str]) -> None:
    """Remove what this module wrote into ``directory`` except ``keep`` (never foreign files)."""
    for entry in directory.iterdir():
        ours = entry.name.startswith(PREFIX) or entry.name.endswith(TMP) or entry.name in LEGACY_FILES
        if entry.name in keep or not ours:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


# ------------------------------------------------------------------ what a checkpoint holds


def trainable_state(model: Any) -> dict[str, torch.Tensor]:
    """A copy of the trainable weights, on the CPU (the best epoch's, and what a checkpoint saves)."""
    return {n: p.detach().cpu().clone().contiguous() for n, p in model.named_parameters() if p.requires_grad}


def _rng_tensors() -> dict[str, torch.Tensor]:
    """Torch generator states (dropout masks come from these)."""
    states = {"torch": torch.get_rng_state()}
    # Only when this process already uses CUDA: asking would otherwise start a CUDA context.
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.update({f"cuda.{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
    return states


def _rng_json() -> dict[str, Any]:
    """numpy's and Python's generator states as JSON: nothing loaded back is ever unpickled."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {
        "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(gauss)],
        "python": [version, list(internal), gauss_next],
    }


def _state(fitter: Fitter, epoch: int) -> dict[str, Any]:
    return {
        "epoch": epoch,
        "step": fitter.step,
        "best": fitter.best,
        "history": fitter.history,
        "epoch_seconds": fitter.epoch_seconds,
        "eval_seconds": fitter.eval_seconds,
        "tokens": [fitter.tokens.real, fitter.tokens.padded],
        "resolved": fitter.resolved,  # what "auto" chose: a resume trains on with the same numbers
        # Checkpoints fall on epoch boundaries, and an epoch's order is a function of its seed
        # alone, so the sampler's position is the next epoch's first batch under this seed.
        "sampler": {
            "epoch": epoch + 1,
            "batch": 0,
            "shuffle_seed": fitter.cfg.seed + epoch + 1,
            "group_by_length": fitter.cfg.group_by_length,
        },
    }


def _write_files(folder: Path, fitter: Fitter, epoch: int) -> None:
    written = [folder / "trainable.safetensors", folder / "optimizer.pt"]
    save_file(trainable_state(fitter.model), str(written[0]))
    states = {"optimizer": fitter.optimizer.state_dict(), "scheduler": fitter.scheduler.state_dict()}
    if fitter.scaler is not None:  # fp16 loss scaling: its scale is part of the optimizer's state
        states["scaler"] = fitter.scaler.state_dict()
    torch.save(states, written[1])
    if fitter.best_state is not None:
        written.append(folder / "best.safetensors")
        save_file({k: v.contiguous() for k, v in fitter.best_state.items()}, str(written[-1]))
    written.append(folder / "rng.safetensors")
    save_file(_rng_tensors(), str(written[-1]))
    for path in written:
        fsync_path(path)
    write_text(folder / "rng.json", json.dumps(_rng_json()))
    write_text(folder / STATE, json.dumps(_state(fitter, epoch)))
    fsync_path(folder)


# ------------------------------------------------------------------ reading


def _current(directory: Path) -> Path | None:
    """The folder holding the complete checkpoint ``directory`` points at, if any."""
    try:
        name = (directory / POINTER).read_text().strip()
    except FileNotFoundError:
        # No pointer: either nothing completed yet, or a flat checkpoint from an older version.
        return directory if (directory / STATE).is_file() else None
    if not name.startswith(PREFIX) or "/" in name or name.endswith(TMP):
        return None
    return directory / name


def _read(directory: Path) -> tuple[Path, dict[str, Any]] | None:
    """The current checkpoint folder and its state, or None when there is no complete one."""
    directory = Path(directory)
    # A reader in another process (the app deciding whether a job can resume) can lose a race
    # with a save that switches the pointer and removes the folder it had just read; the
    # pointer then names a newer complete folder, so reading it again settles it.
    for _ in range(3):
        folder = _current(directory)
        if folder is None:
            return None
        try:
            return folder, json.loads((folder / STATE).read_text())
        except FileNotFoundError:
            continue
    return None


def last_epoch(directory: Path) -> int | None:
    """The epoch of the complete checkpoint in ``directory``, or None when it holds none."""
    found = _read(Path(directory))
    return int(found[1]["epoch"]) if found else None


def resolved_settings(directory: Path) -> dict[str, Any] | None:
    """The learning rate, epochs and search record the checkpointed run trained with."""
    found = _read(Path(directory))
    return (found[1].get("resolved") or None) if found else None


# ------------------------------------------------------------------ save / load


def _live_names(directory: Path, live: Path | None) -> set[str]:
    """What a save must not sweep before its own checkpoint is complete."""
    if live == directory:
        return {POINTER, *LEGACY_FILES}  # a flat checkpoint stays live until the pointer exists
    return {POINTER, live.name} if live else {POINTER}


def save(directory: Path, fitter: Fitter, epoch: int) -> None:
    """Write the checkpoint for ``epoch``; the previous one stays until this one is complete."""
    directory = Path(directory)
    make_dir(directory)
    live = _current(directory)
    _sweep(directory, _live_names(directory, live))  # an interrupted save's leftovers
    name = f"{PREFIX}{epoch:04d}"
    if live is not None and live.name == name:
        name += "-1"  # the same epoch saved again: never touch the live folder
    tmp = directory / (name + TMP)
    tmp.mkdir()
    try:
        _write_files(tmp, fitter, epoch)
    except BaseException:
        # A full disk (OSError, or safetensors' own SafetensorError): give back what this save
        # took at once, so that the job's failure can still be written (the database and the
        # log live on the same disk). The live checkpoint is untouched.
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.rename(tmp, directory / name)
    fsync_path(directory)
    _switch_pointer(directory, name)
    _sweep(directory, {POINTER, name})


def _restore_weights(folder: Path, fitter: Fitter) -> None:
    weights = load_file(str(folder / "trainable.safetensors"))
    trainable = {n for n, p in fitter.model.named_parameters() if p.requires_grad}
    # strict=False because frozen weights are not stored; every trainable one must be.
    missing, unexpected = trainable - weights.keys(), weights.keys() - trainable
    if missing or unexpected:
        raise ConfigError(
            f"the checkpoint in {folder} does not match this model "
            f"({len(missing)} trainable weights missing, {len(unexpected)} unknown); "
            "resume with the method and settings it was written with"
        )
    fitter.model.load_state_dict(weights, strict=False)


def _restore_optimizer(folder: Path, fitter: Fitter) -> None:
    opt = torch.load(folder / "optimizer.pt", weights_only=True)
    fitter.optimizer.load_state_dict(opt["optimizer"])
    fitter.scheduler.load_state_dict(opt["scheduler"])
    if fitter.scaler is not None and "scaler" in opt:
        fitter.scaler.load_state_dict(opt["scaler"])


def _restore_rng(folder: Path) -> None:
    """Put every generator back where the interrupted run left it (older checkpoints lack them)."""
    if (folder / "rng.safetensors").is_file():
        tensors = load_file(str(folder / "rng.safetensors"))
        torch.set_rng_state(tensors["torch"])
        cuda = sorted(int(k.split(".")[1]) for k in tensors if k.startswith("cuda."))
        if cuda and torch.cuda.is_available():
            for i in cuda[: torch.cuda.device_count()]:
                torch.cuda.set_rng_state(tensors[f"cuda.{i}"], device=i)
    if (folder / "rng.json").is_file():
        states = json.loads((folder / "rng.json").read_text())
        name, keys, pos, has_gauss, gauss = states["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
        version, internal, gauss_next = states["python"]
        random.setstate((version, tuple(internal), gauss_next))


def load(directory: Path, fitter: Fitter) -> int:
    """Restore ``fitter`` from ``directory``; returns the epoch the checkpoint completed.

    Call it last before training continues: it sets the global random generators.
    """
    directory = Path(directory)
    found = _read(directory)
    if found is None:
        raise ConfigError(f"no checkpoint to resume from in {directory}")
    folder, state = found
    _restore_weights(folder, fitter)
    _restore_optimizer(folder, fitter)
    fitter.step, fitter.best, fitter.history = state["step"], state["best"], state["history"]
    fitter.epoch_seconds = state.get("epoch_seconds", [])
    fitter.eval_seconds = state.get("eval_seconds", [])
    fitter.tokens.real, fitter.tokens.padded = state.get("tokens", [0, 0])
    if (folder / "best.safetensors").is_file():
        fitter.best_state = load_file(str(folder / "best.safetensors"))
    sampler = state.get("sampler")
    if sampler and sampler["shuffle_seed"] != fitter.cfg.seed + sampler["epoch"]:
        fitter.cb.on_log(
            f"warning: the checkpoint was written with seed {sampler['shuffle_seed'] - sampler['epoch']}, "
            f"this run uses {fitter.cfg.seed}: batches come in a different order than the original run's"
        )
    if sampler and sampler.get("group_by_length", False) != fitter.cfg.group_by_length:
        fitter.cb.on_log(
            "warning: the checkpoint was written with length grouping "
            f"{'on' if sampler.get('group_by_length') else 'off'}: batches come in a different order"
        )
    _restore_rng(folder)
    return int(state["epoch"])
