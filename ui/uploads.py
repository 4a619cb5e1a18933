"""Dataset files at the public API's edge: in only through Gradio's upload, out without a path.

Whoever reaches the port reaches every endpoint, so a file a caller names must lie in
Gradio's upload folder (else any table the app can read would be readable), and the
upload is removed once the dataset store has its own copy. Going out, a dataset's stored
path is not called "path": gradio_client would take the dict for a file to download.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, cast

from gradio.utils import get_upload_folder

from backend.errors import ConfigError
from service.records import DatasetInfo, PublicDataset

SERVER_PATH_REFUSED = (
    "server paths are not accepted: upload the file itself "
    "(gradio_client: handle_file('data.csv'); the web page: the Upload dataset box)"
)


def public_dataset(dataset: DatasetInfo) -> PublicDataset:
    """A dataset dict for API callers: ``path`` renamed ``stored_file``.

    gradio_client takes any dict with a string "path" for a file to download, and
    the stored copy is not served, so the key must not be called that.
    """
    out: dict[str, Any] = {k: v for k, v in dataset.items() if k != "path"}
    out["stored_file"] = dataset.get("path")
    return cast(PublicDataset, out)


def uploaded_file(file: Any) -> Path:
    """The server path of a file that came through Gradio's upload; else a ConfigError.

    Gradio checks only file dicts tagged ``meta: {"_type": "gradio.FileData"}`` (those must
    lie in its upload folder); a plain string or an untagged ``{"path": ...}`` arrives as
    sent. So the location is checked here, after resolving symlinks and "..": anything
    outside the upload folder would let a caller read any table the app can read.
    """
    raw = file.get("path") if isinstance(file, dict) else getattr(file, "path", file)
    if not raw:
        raise ConfigError("no file given; pass handle_file('your.csv')")
    try:
        path = Path(str(raw)).resolve()
        inside = path.is_relative_to(Path(get_upload_folder()).resolve())
    except (OSError, ValueError):  # e.g. a NUL byte, a symlink loop
        inside = False
    if not inside:
        raise ConfigError(SERVER_PATH_REFUSED)
    return path


def discard_upload(path: Path) -> None:
    """Remove an uploaded file once it is registered or refused (the dataset store keeps
    its own copy), and the folder Gradio made for it. Only inside the upload folder."""
    root = Path(get_upload_folder()).resolve()
    if not path.is_relative_to(root) or path == root or not path.is_file():
        return
    path.unlink(missing_ok=True)
    if path.parent != root:
        with contextlib.suppress(OSError):  # not empty: someone else's upload is in it
            path.parent.rmdir()
