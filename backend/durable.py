"""Writes that survive a crash at any instruction: fsync the data, then the folder entry.

A process can be SIGKILLed anywhere (a cancel's grace period ends that way) and a machine can
lose power; a file that readers trust is therefore written beside its final name, flushed,
renamed over it (atomic on POSIX) and its folder flushed, so readers see the old content or
the new, never a torn mix, and the rename itself is on disk.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """Flush a file or folder to disk (Linux fsyncs a read-only descriptor of either)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_text(path: Path, text: str) -> None:
    """Write ``path`` and flush it to disk (no rename: for files inside a folder not yet live)."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def replace_text(path: Path, text: str, tmp_suffix: str = ".tmp") -> None:
    """Atomically make ``path`` hold ``text``, durably."""
    tmp = path.with_name(path.name + tmp_suffix)
    write_text(tmp, text)
    os.replace(tmp, path)
    fsync_path(path.parent)


def make_dir(directory: Path) -> None:
    """Create ``directory`` (and parents) so that its own entry survives a crash too."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True)
    fsync_path(directory.parent)
