"""Load a run folder for inference with the plain standard libraries.

This is what a user's own script does (and what the model card shows): transformers + peft,
the bottleneck module shipped in the folder, or a few lines of torch for probes. ``predict`` and
the reload check use exactly this path, so "the app's predictions" and "the standard library's"
are the same code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from backend.catalogue import (
    DECODER_TYPES,
    ModelInfo,
    locate_base,
    quantization_config,
    quantized_load_kwargs,
)
from backend.errors import ConfigError
from backend.probing.inference import load_probe
from backend.quant_workarounds import disable_cpu_bf16_4bit, drop_cpu_device_map
from backend.tasks import registry as tasks


def read_manifest(artifact_dir: Path) -> dict[str, Any]:
    path = Path(artifact_dir) / "workbench.json"
    if not path.is_file():
        raise ConfigError(
            f"{artifact_dir} is not a run folder (no workbench.json); pass the "
            "folder that train/--out or a job's artifact created"
        )
    return json.loads(path.read_text())


def _labels(manifest: dict[str, Any]) -> dict[str, Any]:
    """The head's arguments, as the run's task built it (a run from before tasks: classification)."""
    return tasks.of_manifest(manifest).model_kwargs(manifest["label_names"])


def _quant_kwargs(manifest: dict[str, Any]) -> dict[str, Any]:
    if manifest.get("quant", "none") == "none":
        return {}
    info = ModelInfo(
        manifest["base_model"],
        locate_base(manifest),
        manifest["model_type"],
        0,
        0,
        manifest["model_type"] in DECODER_TYPES,
    )
    return quantized_load_kwargs(quantization_config(manifest["quant"], info))


def _auto_class(manifest: dict[str, Any]) -> Any:
    """The transformers class of the run's head (its task's)."""
    import transformers

    return getattr(transformers, tasks.get(manifest.get("task")).auto_class)


def _base_classifier(manifest: dict[str, Any]) -> Any:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    model = _auto_class(manifest).from_pretrained(
        locate_base(manifest),
        pad_token_id=manifest.get("pad_token_id"),
        **_labels(manifest),
        **_quant_kwargs(manifest),
    )
    drop_cpu_device_map(model)  # as in training: PEFT's prefix cache needs no CPU-only map
    return model


def load_model(artifact_dir: Path) -> Any:
    """The trained classifier as an ``nn.Module`` returning ``.logits`` (probes: raw logits)."""
    manifest = read_manifest(artifact_dir)
    model = _load_model(Path(artifact_dir), manifest)
    if manifest.get("quant") == "4bit":  # same 4-bit CPU kernel as training used
        disable_cpu_bf16_4bit(model)
    return model


def _load_model(artifact_dir: Path, manifest: dict[str, Any]) -> Any:
    library = manifest["library"]
    if library == "peft":
        from peft import PeftModel

        return PeftModel.from_pretrained(_base_classifier(manifest), str(artifact_dir))
    if library in ("bottleneck", "adapters"):  # "adapters": saved by AdapterHub, before issue 45
        return _load_bottleneck(artifact_dir, manifest, library)
    if library == "transformers":
        return _auto_class(manifest).from_pretrained(str(artifact_dir))
    if library == "own":
        return load_probe(Path(artifact_dir), manifest, _quant_kwargs(manifest))
    raise ConfigError(f"unknown artifact library '{library}' in {artifact_dir}")


def _load_bottleneck(artifact_dir: Path, manifest: dict[str, Any], library: str) -> Any:
    """The base classifier, the head that trained with the adapters, and the adapters."""
    from safetensors.torch import load_file

    from backend.methods import adapterhub_layout, bottleneck

    model = _base_classifier(manifest)
    if library == "bottleneck":
        bottleneck.load(model, artifact_dir)
        head = "head.safetensors"
    else:
        cfg, state = adapterhub_layout.read(artifact_dir)
        bottleneck.attach(model, cfg).load_state_dict(state)
        head = "model_head.safetensors"
    unexpected = model.load_state_dict(load_file(str(artifact_dir / head)), strict=False).unexpected_keys
    if unexpected:
        raise ConfigError(
            f"{artifact_dir.name}/{head} holds weights the model has no place for: {unexpected[:3]}"
        )
    return model


class Predictor:
    """Batched class probabilities from a run folder."""

    def __init__(self, artifact_dir: str | Path) -> None:
        from transformers import AutoTokenizer

        self.dir = Path(artifact_dir)
        self.manifest = read_manifest(self.dir)
        self.label_names: list[str] = self.manifest["label_names"]
        self.task = tasks.of_manifest(self.manifest)
        self.width = int(self.task.model_kwargs(self.label_names)["num_labels"])  # outputs per row
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.dir))
        self.model = load_model(self.dir)
        self.model.eval()
        self.device = next(self.model.parameters()).device

    def predict_proba(
        self, texts: list[str], pairs: list[str] | None = None, batch_size: int = 64
    ) -> np.ndarray:
        """The task's outputs (class probabilities, scores, per-word tag probabilities) in the
        order of ``texts``, encoded and batched as training did (by length: least padding).
        A token task's texts are its words, one space apart (``Task.words`` makes them)."""
        from backend.data.batching import Encoded
        from backend.data.prepare import Split
        from backend.training.metrics import predict_probs

        if not texts:
            return np.zeros((0, self.width))
        split = Split(list(texts), pairs, self.task.blank_targets(texts), list(range(1, len(texts) + 1)))
        enc = Encoded(self.tokenizer, split, self.manifest["max_length"], self.task)
        return predict_probs(self.model, enc, self.device, batch_size=batch_size, task=self.task)

    def predict_items(self, texts: list[str], pairs: list[str] | None = None) -> list[dict[str, Any]]:
        """Each text's ``label``, ``probability`` (a class's) and ``score`` (a number's); a
        token task's also its ``words`` (the text split as the task reads it), tags and entities."""
        rows = self._rows(texts)
        items = self.task.prediction_items(self.predict_proba(rows, pairs), self.label_names)
        return self.task.shown_items(items, rows)

    def predict_columns(self, texts: list[str], pairs: list[str] | None = None) -> dict[str, list[Any]]:
        """``predict``'s output columns for the run's task (label and probability; score; tags
        and entities)."""
        return self.task.prediction_columns(self.predict_proba(self._rows(texts), pairs), self.label_names)

    def _rows(self, texts: list[Any]) -> list[str]:
        """Texts as the task's rows hold them (a token task's: words one space apart)."""
        rows = [self.task.text_of(t) for t in texts]
        self.task.check_texts(rows)
        return rows
