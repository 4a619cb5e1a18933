"""Every method trained on one file, then each export reloaded the two ways a user would: the
standard libraries' load in a fresh process (``run_fresh_processes``) and the model card's own
snippet, run outside the app with ``suffix`` appended (it prints one ``RESULT`` line)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from backend.artifacts.reload_check import run_fresh_processes
from backend.run import run_training
from backend.training.config import TrainConfig
from tests.fresh_python import fresh_python_each
from tests.tiny_models import TINY_BERT


def train_and_reload(data: Path, root: Path, methods: list[str], suffix: str) -> dict[str, Any]:
    """``summaries``, ``checks`` (the fresh-process reloads) and ``cards`` (the snippets'
    results) per method, on the tiny BERT (the probe 5 epochs, the others 1)."""
    summaries = {}
    for method in methods:
        epochs = 1 if method != "probe" else 5
        cfg = TrainConfig(data=str(data), method=method, model=TINY_BERT, epochs=epochs, batch_size=16,
                          max_length=32, lr=None, early_stopping_patience=0)  # fmt: skip
        summaries[method] = run_training(cfg, root / method, feature_cache_dir=root / "features")
    folders = [Path(summaries[m]["artifact_dir"]) for m in methods]
    jobs = []
    for folder in folders:
        code = re.search(r"```python\n(.*?)```", (folder / "README.md").read_text(), re.S).group(1)
        max_length = json.loads((folder / "workbench.json").read_text())["max_length"]
        jobs.append((folder, code + suffix.format(max_length=max_length)))
    checks = dict(zip(methods, run_fresh_processes(folders), strict=True))
    cards = dict(zip(methods, fresh_python_each(jobs), strict=True))
    return {"summaries": summaries, "checks": checks, "cards": cards}
