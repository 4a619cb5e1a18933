"""Write a run's artifact folder in each library's standard format.

Layout of a run folder (everything at the top level so the standard loaders take the
folder itself):
  PEFT methods   adapter_config.json + adapter_model.safetensors (head included)
  adapter        bottleneck.safetensors + bottleneck_config.json + head.safetensors, and the
                 module's source, bottleneck.py (torch only; runs saved before issue 45 hold
                 AdapterHub's ``save_adapter`` output instead, which still loads)
  full           config.json + model.safetensors (``save_pretrained``)
  probe          probe_head.safetensors + probe_config.json
  all            tokenizer files, labels.json, training_config.json, workbench.json,
                 metrics.json, check_predictions.json, README.md (model card)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from safetensors.torch import save_file

from backend.artifacts.model_card import render_model_card
from backend.artifacts.predictions import write_predictions
from backend.catalogue import ModelInfo
from backend.data.prepare import PreparedData
from backend.methods import registry
from backend.training.outcome import RunOutcome

FORMAT_VERSION = 1
CHECK_ROWS = 64  # eval rows whose probabilities are stored for the reload check
ADAPTER_FILES = {  # the files that make up "the adapter" (its size is reported)
    "peft": ("adapter_model.safetensors",),
    "adapters": ("adapter.safetensors", "model_head.safetensors"),  # runs from before issue 45
    "bottleneck": ("bottleneck.safetensors", "head.safetensors"),
    "transformers": ("model.safetensors",),
    "own": ("probe_head.safetensors",),
}


def save_weights(model: Any, library: str, out_dir: Path) -> None:
    """Save the trained weights the way the method's own library expects to load them."""
    if library == "peft":
        model.save_pretrained(str(out_dir), safe_serialization=True)
    elif library == "bottleneck":
        save_bottleneck(model, out_dir)
    elif library == "transformers":
        model.save_pretrained(str(out_dir), safe_serialization=True)
    else:
        raise ValueError(f"no weight saver for library {library}")


def save_bottleneck(model: Any, out_dir: Path) -> None:
    """The adapters (their weights and config), the head that trained beside them, and the module's
    source: the folder loads onto the plain base with transformers and torch alone."""
    import shutil

    from backend.methods import bottleneck

    bottleneck.save(model, out_dir)
    head = {
        name: p.detach().contiguous().cpu()
        for name, p in model.named_parameters()
        if p.requires_grad and ".bottleneck_adapters." not in f".{name}"
    }
    save_file(head, str(out_dir / "head.safetensors"))
    shutil.copyfile(bottleneck.__file__, out_dir / "bottleneck.py")


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


def adapter_bytes(out_dir: Path, library: str) -> int:
    return sum((out_dir / f).stat().st_size for f in ADAPTER_FILES[library] if (out_dir / f).is_file())


def write_common(
    out_dir: Path,
    outcome: RunOutcome,
    *,
    info: ModelInfo,
    tokenizer: Any,
    data: PreparedData,
    extra_manifest: dict[str, Any],
) -> dict[str, Any]:
    """Files every run folder has; returns artifact facts for the summary."""
    cfg, summary, eval_probs = outcome.cfg, outcome.summary, outcome.eval_probs
    spec = registry.get(cfg.method)
    tokenizer.save_pretrained(str(out_dir))
    (out_dir / "labels.json").write_text(
        json.dumps({"id2label": data.id2label, "label2id": data.label2id}, indent=2)
    )
    # The numbers the run trained with, and what "auto" asked for and chose (candidates, scores).
    record = {
        **cfg.to_dict(),
        **{k: summary.get(k) for k in ("requested", "lr_search")},
        **({"layer_choice": summary["layer_choice"]} if summary.get("layer_choice") else {}),  # probes
    }
    (out_dir / "training_config.json").write_text(json.dumps(record, indent=2))
    manifest = {
        "format_version": FORMAT_VERSION,
        "method": cfg.method,
        "library": spec.library,
        "base_model": info.portable_name,  # what other machines load: a hub id, else a folder name
        "base_model_hub_id": info.hub_id,
        "base_model_path": info.path,  # this machine only: left out of exported zips
        "model_type": info.model_type,
        "quant": cfg.quant,
        "task": data.task.key,
        "label_names": data.label_names,
        "max_length": cfg.max_length,
        "text_column": data.mapping.text,
        "text_pair_column": data.mapping.text_pair,
        "label_column": data.mapping.label,
        "pad_token_id": tokenizer.pad_token_id,
        **extra_manifest,
    }
    (out_dir / "workbench.json").write_text(json.dumps(manifest, indent=2))
    n = min(CHECK_ROWS, len(data.eval))
    check = {
        "texts": data.eval.texts[:n],
        "pairs": data.eval.pairs[:n] if data.eval.pairs is not None else None,
        # per-word outputs as these rows alone give them (as wide as their longest sentence)
        "probs": data.task.stack(list(eval_probs[:n]), data.eval.labels[:n]).tolist() if n else [],
    }
    (out_dir / "check_predictions.json").write_text(json.dumps(check))
    write_predictions(out_dir, data.eval, eval_probs, data.label_names, data.task)  # for error analysis
    make_portable(out_dir, info.portable_name, (info.path,))
    size = adapter_bytes(out_dir, spec.library)
    (out_dir / "README.md").write_text(render_model_card(manifest, cfg, {**summary, "adapter_bytes": size}))
    return {"artifact_dir": str(out_dir.resolve()), "adapter_bytes": size}


def save_run(
    out_dir: Path,
    outcome: RunOutcome,
    *,
    info: ModelInfo,
    tokenizer: Any,
    data: PreparedData,
) -> dict[str, Any]:
    """Write the whole artifact folder of a finished run; returns artifact facts for the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    if outcome.probe is not None:  # a head trained on cached features: its tensors and config
        save_file(outcome.head_state, str(out_dir / "probe_head.safetensors"))
        (out_dir / "probe_config.json").write_text(json.dumps(outcome.probe, indent=2))
        extra = {"probe": outcome.probe}
    else:
        save_weights(outcome.model, registry.get(outcome.cfg.method).library, out_dir)
    return write_common(out_dir, outcome, info=info, tokenizer=tokenizer, data=data, extra_manifest=extra)
