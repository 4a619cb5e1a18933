"""A quantized base model saved once and read back, so later 4-/8-bit loads skip the fp32 file.

Quantizing while loading reads every fp32 weight: SmolLM2-135M's 4-bit load peaked at 1,502 MB
(its 513 MB fp32 file resident beside the quantized weights and the scratch of quantizing
them), above the 1,454 MB its training then peaked at (bench/MODELS.md). Read back from its
own 168 MB quantized copy, the same load peaked at 818 MB (`bench/models_run.py 4bit
--load-only` once the copy was there), with bit-identical weights
(tests/integration/test_quantized_copy.py).

The copy leaves out the classification head: every run creates its own from its seed, with
its own label count, exactly as a load from the original does. Copies are keyed by the source
folder and its weight files' sizes and times, by the quantization config, and by the
bitsandbytes and transformers versions whose format they are in, so a changed source,
setting or library makes a new one.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

# A copy pays for its disk only where the fp32 weights are large enough for their load to
# matter; it also keeps the tiny test models out of models_cache.
MIN_SOURCE_BYTES = 50 * 2**20
WEIGHT_SUFFIXES = (".safetensors", ".bin")
READY = "complete"  # written last: a folder without it is an interrupted save


def weight_files(source: Path) -> list[Path]:
    return sorted(p for p in source.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)


def copy_folder(source: str, quant: str, cache_root: Path, name: str, settings: str = "") -> Path | None:
    """Where the quantized copy of ``source`` (the model called ``name``, quantized with the
    config ``settings``) lives, or would; None when a copy does not pay."""
    path = Path(source)
    if not path.is_dir():
        return None  # a hub id that is not downloaded yet: transformers fetches and quantizes it
    files = weight_files(path)
    if sum(f.stat().st_size for f in files) < MIN_SOURCE_BYTES:
        return None
    import bitsandbytes
    import transformers

    stamp = [str(path.resolve()), settings, bitsandbytes.__version__, transformers.__version__]
    stamp += [f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files]
    key = hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "--", name).strip(".-") or "model"
    return cache_root / "quantized" / f"{readable}-{key}" / quant


def ready(folder: Path | None) -> bool:
    return folder is not None and (folder / READY).is_file()


def save_copy(model: Any, folder: Path, head_names: list[str]) -> bool:
    """Save ``model``'s quantized weights without its head to ``folder``; False if it could not.

    Written into a temporary folder and renamed, so a concurrent run or a crash never leaves
    a half-written copy that a later load would read. A failed save (full disk, read-only
    cache, a model bitsandbytes cannot serialize) costs only the speed-up: the next run
    quantizes from the original again.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        model.save_pretrained(str(scratch), safe_serialization=True)
        drop_tensors(scratch, tuple(f"{name}." for name in head_names))
        (scratch / READY).write_text("")
        scratch.rename(folder)
        return True
    except Exception:  # noqa: BLE001 - a cache: whatever fails (a rename race, a full disk, a
        # format the library cannot save), the run goes on with the weights it just quantized
        return ready(folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def drop_tensors(folder: Path, prefixes: tuple[str, ...]) -> None:
    """Rewrite the saved weights without the tensors named ``prefixes``.

    transformers saves a quantized model's own state dict whatever ``state_dict`` it is
    given, so the head is taken out of the files afterwards (and out of a sharded index).
    """
    from safetensors import safe_open
    from safetensors.torch import save_file

    for path in folder.glob("*.safetensors"):
        with safe_open(str(path), framework="pt") as f:
            metadata = f.metadata()
            kept = {k: f.get_tensor(k) for k in f.keys() if not k.startswith(prefixes)}  # noqa: SIM118 - not iterable
        # a new file, then a rename: the tensors read may still be views of the old file's map
        save_file(kept, str(path.with_suffix(".tmp")), metadata=metadata)
        path.with_suffix(".tmp").replace(path)
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = json.loads(index.read_text())
        data["weight_map"] = {k: v for k, v in data["weight_map"].items() if not k.startswith(prefixes)}
        index.write_text(json.dumps(data, indent=2))
