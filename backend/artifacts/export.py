"""Pack a finished run folder (layout: ``backend.artifacts.save``) as a zip that works elsewhere."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from backend.artifacts.predictions import EVALUATIONS_DIR, PREDICTIONS_FILE
from backend.errors import ConfigError


def _strip_server_paths(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """The copy of a run file that goes into a zip: no path of this server, no user texts."""
    if name == "workbench.json":
        data = {k: v for k, v in data.items() if k != "base_model_path"}
    elif name == "metrics.json":
        data = {k: v for k, v in data.items() if k != "artifact_dir"}
    elif name == "training_config.json":
        for key in ("data", "eval_data"):  # the file names say which data; the folders are ours
            if data.get(key):
                data[key] = Path(data[key]).name
    return data


ZIP_REWRITTEN = ("workbench.json", "metrics.json", "training_config.json")
SAMPLES_FILE = "check_predictions.json"  # evaluation texts with their predictions
# Files that hold evaluation texts: in a zip only when the person asks for samples.
TEXT_FILES = (SAMPLES_FILE, PREDICTIONS_FILE)


def export_zip(artifact_dir: str | Path, out_zip: str | Path, *, include_samples: bool = False) -> Path:
    """Pack a run folder (without resumable checkpoints) into one zip that works elsewhere.

    No path of this server goes in, and no training or evaluation text unless
    ``include_samples`` (the sample predictions file, for checking a reload).
    """
    artifact_dir, out_zip = Path(artifact_dir), Path(out_zip)
    if not (artifact_dir / "workbench.json").is_file():
        raise ConfigError(f"{artifact_dir} is not a finished run folder (no workbench.json)")
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(out_zip.suffix + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(artifact_dir.rglob("*")):
            rel = path.relative_to(artifact_dir)
            # checkpoints and the merged model are not the adapter; the job log and evaluations
            # on other datasets (their texts and predictions) are the app's own records
            if not path.is_file() or rel.parts[0] in ("checkpoint", "merged", "job.log", EVALUATIONS_DIR):
                continue
            if rel.as_posix() in TEXT_FILES and not include_samples:
                continue
            if rel.as_posix() in ZIP_REWRITTEN:
                data = _strip_server_paths(rel.name, json.loads(path.read_text()))
                zf.writestr(rel.as_posix(), json.dumps(data, indent=2))
            else:
                zf.write(path, rel.as_posix())
    tmp.replace(out_zip)
    return out_zip
