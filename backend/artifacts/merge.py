"""Fold a LoRA run into its base model: a plain transformers classifier, no peft needed.

``merge_and_unload()`` adds B·A·(alpha/r) into each adapted weight and drops the LoRA
modules, so the merged model has the base's size and speed. The result is saved in
``<run>/merged/`` (which ``export_zip`` leaves out of the adapter zip) and zipped on
its own. Before it is kept, its predictions are checked against the ones the run
stored at the end of training.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

from backend.artifacts.load import read_manifest
from backend.artifacts.model_card import LOAD_SNIPPETS
from backend.artifacts.portable import make_portable
from backend.artifacts.writer import Writer
from backend.catalogue import load_classifier, locate_base, model_info
from backend.errors import ConfigError, ModelError
from backend.methods import registry
from backend.tasks import registry as tasks
from backend.tasks.base import Task

MAX_PROB_DIFF = 1e-3  # merging is exact up to float rounding; more than this is a bug

_CARD = """# Merged LoRA model for `{base}`

The LoRA update of run `{run}` folded into the base weights: a plain
`transformers` model (`{auto_class}`). {outputs} No peft needed.

```python
import torch
{load}
enc = tok(["an example text"], return_tensors="pt", truncation=True, max_length={max_length})
with torch.no_grad():
    out = model(**enc)
{predict}```
"""


class Merged(Writer):
    """Export format ``merged``, made on demand: a LoRA run folded into its base."""

    key = "merged"
    label = "the merged model"

    def export(self, run_dir: Path, out_zip: Path) -> Path:
        task = tasks.get(read_manifest(run_dir).get("task"))
        if self.key not in task.exports:
            raise ConfigError(f"a {task.label} run has no merged model; download the run's zip instead")
        return merge_lora(run_dir, out_zip)


def merge_lora(artifact_dir: str | Path, out_zip: str | Path) -> Path:
    """Merge a succeeded LoRA run (once; later calls reuse ``merged/``) and zip it."""
    run = Path(artifact_dir)
    manifest = read_manifest(run)
    if not any(s.key == manifest["method"] and s.mergeable for s in registry.all_methods()):
        raise ConfigError(f"only LoRA runs can be merged into the base model; this is {manifest['method']}")
    if manifest.get("quant", "none") != "none":
        raise ConfigError(
            f"this run trained on a {manifest['quant']} quantized base; merging into full-precision "
            "weights would change its predictions. Download the adapter instead."
        )
    merged = run / "merged"
    if not (merged / "config.json").is_file():
        _merge(run, manifest, merged)
    return _zip(merged, Path(out_zip))


def _merge(run: Path, manifest: dict[str, Any], merged: Path) -> None:
    from peft import PeftModel
    from transformers import AutoTokenizer

    info = model_info(locate_base(manifest))
    task, names = tasks.of_manifest(manifest), manifest["label_names"]
    base = load_classifier(info, names, head=task.model_kwargs(names), auto_class=task.auto_class)
    model = PeftModel.from_pretrained(base, str(run)).merge_and_unload().eval()
    tokenizer = AutoTokenizer.from_pretrained(str(run))
    _check(model, tokenizer, run, manifest, task)
    tmp = merged.with_name(f".merged.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    make_portable(tmp, manifest["base_model"], (info.path,))
    shutil.copyfile(run / "labels.json", tmp / "labels.json")
    load = LOAD_SNIPPETS["transformers"].replace("AutoModelForSequenceClassification", task.auto_class)
    (tmp / "README.md").write_text(
        _CARD.format(
            base=manifest["base_model"],
            run=run.name,
            auto_class=task.auto_class,
            outputs=task.card_outputs(names),
            load=load,
            max_length=manifest["max_length"],
            predict=task.card_predict("transformers", False),
        )
    )
    shutil.rmtree(merged, ignore_errors=True)
    os.replace(tmp, merged)  # a half-written folder is never taken for a merged model


def _check(model: Any, tokenizer: Any, run: Path, manifest: dict[str, Any], task: Task) -> None:
    """The merged model must predict what the adapter predicted at the end of training (the
    run's own encoding and outputs: class probabilities, a score, tags per word)."""
    import numpy as np

    from backend.data.batching import Encoded
    from backend.data.prepare import Split
    from backend.training.metrics import predict_probs

    check_file = run / "check_predictions.json"
    if not check_file.is_file():
        return
    check = json.loads(check_file.read_text())
    if not check["texts"]:
        return
    texts = check["texts"]
    split = Split(texts, check.get("pairs"), task.blank_targets(texts), list(range(1, len(texts) + 1)))
    enc = Encoded(tokenizer, split, manifest["max_length"], task)
    probs = predict_probs(model, enc, next(model.parameters()).device, task=task)
    want = np.asarray(check["probs"], dtype=float)
    diff = task.same_outputs(probs, want, MAX_PROB_DIFF)["max_abs_diff"]  # the outputs, not the labels
    if diff > MAX_PROB_DIFF:
        raise ModelError(
            f"the merged model's outputs differ from the adapter's by {diff:.4f}; download the adapter "
            "instead"
        )


def _zip(folder: Path, out_zip: Path) -> Path:
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_zip.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    tmp.replace(out_zip)
    return out_zip
