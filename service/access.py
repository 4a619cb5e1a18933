"""What a caller over the network may name: base models that are no path on this server."""

from __future__ import annotations

from pathlib import Path

from backend.errors import ConfigError
from backend.hub_cache import looks_like_hub_id
from backend.settings import PROJECT_ROOT

LOCAL_MODELS_HINT = (
    "pick a model from the list, put its folder under models_cache/, or give a hub id like "
    "'owner/name' (whoever starts the app can allow local folders with --allow-local-models)"
)


def check_model_name(name: str | None, catalogue: list[str], *, allow_local: bool = False) -> None:
    """Refuse a base model that names a file or folder on the server.

    Accepted: nothing (the default), a catalogue name (the default model and the
    models_cache/ folders) and a hub id; with ``allow_local`` anything. The CLI does not
    call this: whoever runs it is a local user already.
    """
    if not name or allow_local or name in catalogue:
        return
    if Path(name).is_absolute() or ".." in name or name.startswith("~"):
        raise ConfigError(f"model '{name}': server paths are not accepted; {LOCAL_MODELS_HINT}")
    if not looks_like_hub_id(name):
        raise ConfigError(f"model '{name}' is neither a listed model nor a hub id; {LOCAL_MODELS_HINT}")
    # The backend tries a name as a folder before the hub (from the app's and the worker's
    # working folder), so a hub-shaped name must not name an existing one.
    if any((base / name).exists() for base in {Path.cwd(), PROJECT_ROOT}):
        raise ConfigError(f"model '{name}' names a folder on the server; {LOCAL_MODELS_HINT}")
