"""Registered datasets: a stored copy of each uploaded file plus its database row.

Files are stored once per content (``datasets/<sha256[:16]>/<original name>``), so
jobs keep working when the upload's original is moved or edited. The same content
with the same column mapping is the same dataset row, however often it is uploaded.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import or_, select

from backend.data.mapping import ColumnMapping
from backend.data.read import file_sha256
from backend.data.spec import DatasetSpec
from backend.errors import ConfigError
from jobs.db import Database
from jobs.records import DatasetInfo, DatasetRemoval
from jobs.schema import QUEUED, RUNNING, Dataset, Job

GENERIC_STEMS = {"train", "training", "dev", "test", "eval", "valid", "validation", "data"}


def default_name(path: Path) -> str:
    """``sst2/train.csv`` -> "sst2-train": a bare "train" says too little in a list."""
    if path.stem.lower() in GENERIC_STEMS and path.parent.name:
        return f"{path.parent.name}-{path.stem}"
    return path.stem


def mapping_key(mapping: ColumnMapping) -> str:
    """One comparable string for a column mapping (no pair column counts as a value)."""
    return "\x1f".join((mapping.text, mapping.text_pair or "", mapping.label))


def as_dict(row: Dataset) -> DatasetInfo:
    """The dataset dict the API returns."""
    return {
        "id": row.id,
        "name": row.name,
        "path": row.path,
        "sha256": row.sha256,
        "rows": row.rows,
        "columns": list(row.columns),
        "mapping": {
            "text": row.text_column,
            "text_pair": row.text_pair_column,
            "label": row.label_column,
        },
        "label_counts": dict(row.label_counts),
        "invalid_rows": row.invalid_rows,
        "created": row.created_at.isoformat(),
    }


def store_file(source: Path, datasets_dir: Path, sha256: str) -> Path:
    """Copy ``source`` into the content-addressed store (atomically); the stored path."""
    folder = datasets_dir / sha256[:16]
    target = folder / source.name
    if target.is_file() and file_sha256(target) == sha256:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{source.name}.{uuid.uuid4().hex}.tmp"
    shutil.copyfile(source, tmp)
    os.replace(tmp, target)  # a concurrent reader never sees half a file
    return target


def _find(db: Database, sha256: str, key: str) -> Dataset | None:
    with db.read() as session:
        query = select(Dataset).where(Dataset.sha256 == sha256, Dataset.mapping_key == key)
        return session.scalar(query)


def register(db: Database, datasets_dir: Path, spec: DatasetSpec, name: str | None) -> DatasetInfo:
    """Store the file ``spec`` describes (already read and checked) and return its row.

    An existing row for the same content and mapping is reused. Nothing here reads the
    file again: its hash, mapping and counts come from ``spec``.
    """
    source, mapping = spec.path, spec.mapping
    sha256, key = spec.sha256, mapping_key(mapping)
    existing = _find(db, sha256, key)
    if existing is not None and Path(existing.path).is_file():
        return as_dict(existing)
    stored = store_file(source, datasets_dir, sha256)

    def record(session: Any) -> DatasetInfo:
        # Looked up again inside the write lock: a concurrent upload may have won.
        db.take_turns(session, f"dataset {sha256} {key}")
        row = session.scalar(select(Dataset).where(Dataset.sha256 == sha256, Dataset.mapping_key == key))
        if row is None:
            row = Dataset(
                name=name or default_name(source),
                path=str(stored),
                sha256=sha256,
                mapping_key=key,
                text_column=mapping.text,
                text_pair_column=mapping.text_pair,
                label_column=mapping.label,
                columns=list(spec.columns),
                rows=spec.rows,
                invalid_rows=spec.invalid_rows,
                label_counts=dict(spec.label_counts),
            )
            session.add(row)
            session.flush()
        elif not Path(row.path).is_file():
            row.path = str(stored)  # the stored copy was removed by hand: use the new one
        return as_dict(row)

    return db.write_for_request(record, what=f"storing the dataset {source.name}")


def list_all(db: Database) -> list[DatasetInfo]:
    """Every registered dataset, newest first."""
    with db.read() as session:
        return [as_dict(r) for r in session.scalars(select(Dataset).order_by(Dataset.id.desc()))]


def get(db: Database, dataset_id: int) -> Dataset | None:
    """One dataset row by id."""
    with db.read() as session:
        return session.get(Dataset, dataset_id)


def remove(db: Database, datasets_dir: Path, dataset_id: int) -> DatasetRemoval:
    """Delete a dataset's row, then its stored copy unless another row uses that file.

    Refused (ConfigError) while a queued or running job trains or evaluates on it: the
    worker reads the stored copy. Finished jobs keep their results (their dataset is
    shown as unknown). Only a file inside ``datasets_dir`` is ever removed.
    """
    with db.write() as session:
        row = session.get(Dataset, dataset_id)
        if row is None:
            raise ConfigError(f"no dataset {dataset_id}")
        uses = or_(Job.dataset_id == dataset_id, Job.eval_dataset_id == dataset_id)
        busy = list(session.scalars(select(Job.id).where(uses, Job.status.in_((QUEUED, RUNNING)))))
        if busy:
            ids = ", ".join(str(i) for i in sorted(busy))
            raise ConfigError(
                f"dataset {dataset_id} is used by queued or running job(s) {ids}; cancel them "
                "(python app.py cancel ID) or let them finish, then delete it"
            )
        stored = Path(row.path)
        shared = session.scalar(select(Dataset.id).where(Dataset.path == row.path, Dataset.id != dataset_id))
        session.delete(row)
        # Inside the write transaction, so no other writer sees the row gone and the file
        # still there. (An upload of the same content racing with this may record a row
        # whose file is gone; the next upload of that file stores it again: see register.)
        removed = shared is None and _remove_stored(stored, datasets_dir)
    return {"id": dataset_id, "deleted": True, "file_removed": removed}


def _remove_stored(path: Path, datasets_dir: Path) -> bool:
    """Remove a stored copy (and its folder once empty); never a file outside the store."""
    try:
        path, root = path.resolve(), datasets_dir.resolve()
    except OSError:
        return False
    if not path.is_relative_to(root) or not path.is_file():
        return False
    path.unlink()
    if path.parent != root:
        with contextlib.suppress(OSError):  # not empty: another name of the same content
            path.parent.rmdir()
    return True
