"""Export format ``weights``: the trained weights as the method's own library loads them.

PEFT methods   adapter_config.json + adapter_model.safetensors (head included)
adapter        bottleneck.safetensors + bottleneck_config.json + head.safetensors, and the
               module's source, bottleneck.py (torch only; runs saved before issue 45 hold
               AdapterHub's ``save_adapter`` output instead, which still loads)
full           config.json + model.safetensors (``save_pretrained``)
probe          probe_head.safetensors + probe_config.json
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from safetensors.torch import save_file

from backend.artifacts.writer import Finished, Writer
from backend.methods import registry as methods

ADAPTER_FILES = {  # the files that make up "the adapter" (its size is reported)
    "peft": ("adapter_model.safetensors",),
    "adapters": ("adapter.safetensors", "model_head.safetensors"),  # runs from before issue 45
    "bottleneck": ("bottleneck.safetensors", "head.safetensors"),
    "transformers": ("model.safetensors",),
    "own": ("probe_head.safetensors",),
}


class Weights(Writer):
    key = "weights"
    label = "the adapter (or the fine-tuned model)"

    def write(self, run: Finished) -> None:
        outcome = run.outcome
        if outcome.probe is not None:  # a head trained on cached features: its tensors and config
            save_file(outcome.head_state, str(run.out_dir / "probe_head.safetensors"))
            (run.out_dir / "probe_config.json").write_text(json.dumps(outcome.probe, indent=2))
        else:
            save_weights(outcome.model, methods.get(run.cfg.method).library, run.out_dir)


def save_weights(model: Any, library: str, out_dir: Path) -> None:
    """Save the trained weights the way the method's own library expects to load them."""
    if library in ("peft", "transformers"):
        model.save_pretrained(str(out_dir), safe_serialization=True)
    elif library == "bottleneck":
        save_bottleneck(model, out_dir)
    else:
        raise ValueError(f"no weight saver for library {library}")


def save_bottleneck(model: Any, out_dir: Path) -> None:
    """The adapters (their weights and config), the head that trained beside them, and the module's
    source: the folder loads onto the plain base with transformers and torch alone."""
    from backend.methods import bottleneck

    bottleneck.save(model, out_dir)
    head = {
        name: p.detach().contiguous().cpu()
        for name, p in model.named_parameters()
        if p.requires_grad and ".bottleneck_adapters." not in f".{name}"
    }
    save_file(head, str(out_dir / "head.safetensors"))
    shutil.copyfile(bottleneck.__file__, out_dir / "bottleneck.py")


def adapter_bytes(out_dir: Path, library: str) -> int:
    return sum((out_dir / f).stat().st_size for f in ADAPTER_FILES[library] if (out_dir / f).is_file())
