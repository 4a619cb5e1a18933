"""Write a run's artifact folder: the files every run has, then its task's export formats
(``backend.artifacts.formats``: the trained weights in their library's own layout, the model
card), everything at the top level so the standard loaders take the folder itself.

  all            tokenizer files, labels.json, training_config.json, workbench.json,
                 metrics.json, check_predictions.json, predictions for error analysis
  weights        per library (``backend.artifacts.write_weights``)
  README.md      the model card (``backend.artifacts.write_card``)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from backend.artifacts import formats
from backend.artifacts.portable import make_portable
from backend.artifacts.predictions import write_predictions
from backend.artifacts.write_weights import adapter_bytes
from backend.artifacts.writer import Finished
from backend.catalogue import ModelInfo
from backend.data.prepare import PreparedData
from backend.methods import registry
from backend.training.outcome import RunOutcome

FORMAT_VERSION = 1
CHECK_ROWS = 64  # eval rows whose probabilities are stored for the reload check


def write_common(
    out_dir: Path,
    outcome: RunOutcome,
    *,
    info: ModelInfo,
    tokenizer: Any,
    data: PreparedData,
    extra_manifest: dict[str, Any],
) -> dict[str, Any]:
    """Files every run folder has, whatever its formats; returns its manifest."""
    cfg, summary, eval_probs = outcome.cfg, outcome.summary, outcome.eval_probs
    spec = registry.get(cfg.method)
    tokenizer.save_pretrained(str(out_dir))
    (out_dir / "labels.json").write_text(
        # the names, and what the task says a loader needs beside them (a threshold)
        json.dumps({"id2label": data.id2label, "label2id": data.label2id, **data.task.label_file()}, indent=2)
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
        "task_config": data.task.settings_dict(),  # the run's task settings: a reload reads as it did
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
    return manifest


def save_run(
    out_dir: Path,
    outcome: RunOutcome,
    *,
    info: ModelInfo,
    tokenizer: Any,
    data: PreparedData,
) -> dict[str, Any]:
    """Write the whole artifact folder of a finished run; returns artifact facts for the summary.

    The common files first, then the task's formats in its order (the card after the weights:
    it reports their size, and replaces the README that PEFT's ``save_pretrained`` writes), then
    every library file made portable."""
    out_dir.mkdir(parents=True, exist_ok=True)
    extra = {"probe": outcome.probe} if outcome.probe is not None else {}
    manifest = write_common(out_dir, outcome, info=info, tokenizer=tokenizer, data=data, extra_manifest=extra)
    finished = Finished(out_dir, outcome, manifest)
    for writer in formats.of(data.task):
        writer.write(finished)
    make_portable(out_dir, info.portable_name, (info.path,))
    return {
        "artifact_dir": str(out_dir.resolve()),
        "adapter_bytes": adapter_bytes(out_dir, manifest["library"]),
    }
