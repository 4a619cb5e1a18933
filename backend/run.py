"""One training run, start to finish: data + base model + method -> summary + artifact folder.

The entry point the job worker, the CLI and the benchmarks call. It picks the runner the
method names (``MethodSpec.runner``: the training loop or the cached-feature probe), then
writes the run folder from the runner's :class:`RunOutcome`. No database and no UI here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from backend.artifacts.save import save_run
from backend.catalogue import load_tokenizer, model_info
from backend.data.prepare import PreparedData, with_holdout
from backend.methods import registry
from backend.probing.run import run_probe
from backend.significance import rows_digest
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data, validate
from backend.training.loop import run_loop
from backend.training.lr_warning import lr_choice_warning
from backend.training.outcome import RunContext, RunOutcome
from backend.training.runtime import seed_everything

RUNNERS: dict[str, Callable[[RunContext], RunOutcome]] = {"loop": run_loop, "cached_features": run_probe}


def run_training(
    cfg: TrainConfig,
    out_dir: str | Path,
    callback: Callback | None = None,
    *,
    models_cache: Path | None = None,
    feature_cache_dir: Path | None = None,
    checkpoint_dir: Path | None = None,
    resume_from: Path | None = None,
) -> dict[str, Any]:
    """Train ``cfg``, write the artifact folder ``out_dir`` and return the summary dict."""
    cb = callback or Callback()
    validate(cfg)
    data = with_holdout(load_data(cfg), cfg.seed)
    registry.get(cfg.method).check_task(data.task)  # the task "auto" read from the data
    for warning in data.warnings:
        cb.on_log(f"warning: {warning}")
    if data.holdout is not None:
        cb.on_log(f"held out {len(data.holdout)} training rows to choose the task's auto settings on")
    info = model_info(cfg.model, models_cache)
    spec = registry.get(cfg.method)
    spec.check_model(info)  # before any weights load
    seed_everything(cfg.seed)
    tokenizer = load_tokenizer(info, spec.padding_side(info))
    ctx = RunContext(
        cfg, data, info, tokenizer, cb, time.perf_counter(),
        models_cache, feature_cache_dir,
        checkpoint_dir if spec.resumable else None,
        resume_from if spec.resumable else None,
    )  # fmt: skip
    outcome = RUNNERS[spec.runner](ctx)
    if outcome.task is not None:  # its settings chosen on the held-out rows: saved and reloaded so
        data = replace(data, task=outcome.task)
    summary = outcome.summary
    summary["lr_choice_warning"] = lr_choice_warning(summary)
    # issue 37: the score's 95% interval, stored with the run (not recomputed on every view)
    summary.update(run_intervals(outcome.eval_probs, data))
    for warning in ("learning_flag", "lr_choice_warning"):
        if summary.get(warning):
            cb.on_log(f"warning: {summary[warning]}")
    summary.update(save_run(Path(out_dir), outcome, info=info, tokenizer=tokenizer, data=data))
    record = {**summary, "best": outcome.best, "history": outcome.history}
    (Path(out_dir) / "metrics.json").write_text(json.dumps(record, indent=2))
    return summary


def run_intervals(outputs: Any, data: PreparedData) -> dict[str, Any]:
    """The score's 95% interval (the task's own: ``Task.intervals``) and the digest of the
    evaluation rows it was measured on (what Compare pairs runs by)."""
    split, task = data.eval, data.task
    true = task.truth(split.labels)
    pairs = split.pairs if split.pairs is not None else [None] * len(split.texts)
    names = task.target_names(split.labels, data.label_names)
    return {
        "primary_metric": task.primary_of(data.label_names),
        **task.intervals(true, np.asarray(outputs), data.label_names),
        "eval_rows_digest": rows_digest(list(split.rows), list(split.texts), list(pairs), names),
    }
