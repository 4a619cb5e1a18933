"""A run folder that works on other machines: the libraries' own files name the base model by
its portable name, never by a path on this server."""

from __future__ import annotations

import json
from pathlib import Path

# Keys in the libraries' JSON files that record where the base model was loaded from.
PATH_KEYS = (
    "base_model_name_or_path",
    "tokenizer_name_or_path",
    "_name_or_path",
    "name_or_path",
    "model_name",
)
LIBRARY_JSON = ("adapter_config.json", "config.json", "head_config.json", "tokenizer_config.json")


def make_portable(out_dir: Path, portable: str, server_paths: tuple[str, ...]) -> None:
    """Point the libraries' own files at the base model's portable name (hub id or folder name).

    PEFT's ``AutoPeftModel`` and transformers' configs follow ``base_model_name_or_path`` /
    ``_name_or_path``; a path on this server would make the folder fail on any other machine.
    """
    for name in LIBRARY_JSON:
        path = out_dir / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        changed = False
        for key in PATH_KEYS:
            value = data.get(key)
            if isinstance(value, str) and (value in server_paths or Path(value).is_absolute()):
                data[key], changed = portable, True
        if changed:
            path.write_text(json.dumps(data, indent=2))
