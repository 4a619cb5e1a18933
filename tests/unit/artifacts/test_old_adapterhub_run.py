"""Issue 45: a run folder saved with AdapterHub keeps loading, and gives what it gave.

``tests/fixtures/adapterhub/old-run`` was written by the workbench's own ``run_training`` while
it trained bottleneck adapters with AdapterHub (``record.py`` beside it), on a tiny BERT whose
base is committed beside it. Its predictions then are in ``old-run-expected.json``, and the
training process's own probabilities for its check rows in ``check_predictions.json``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "adapterhub"
OLD_RUN_MODEL = "workbench-tests/adapterhub-bert"  # the base's hub id, as the run names it


def installed_old_run(tmp_path: Path) -> Path:
    """The old run's base in this test run's models cache, and a copy of the run folder."""
    from backend.hub_cache import install_snapshot

    install_snapshot(
        FIXTURE / "old-run-base", OLD_RUN_MODEL, Path(os.environ["WORKBENCH_MODELS_CACHE"]) / "hub"
    )
    run = tmp_path / "old-run"
    shutil.copytree(FIXTURE / "old-run", run)
    return run


def test_an_adapterhub_run_predicts_what_it_predicted(tmp_path: Path) -> None:
    from backend.artifacts.load import Predictor

    run = installed_old_run(tmp_path)
    assert json.loads((run / "workbench.json").read_text())["library"] == "adapters"
    expected = json.loads((FIXTURE / "old-run-expected.json").read_text())
    probabilities = Predictor(run).predict_proba(expected["texts"])
    want = np.asarray(expected["probabilities"])
    assert np.abs(probabilities - want).max() < 1e-5
    # the adapter and head matter: the texts get different answers (a base alone gives ~0.5 each)
    assert np.ptp(want[:, 0]) > 0.1


def test_an_adapterhub_run_passes_its_own_reload_check(tmp_path: Path) -> None:
    """The check the app runs on every saved run, on the training process's own probabilities."""
    from backend.artifacts.reload_check import check_in_this_process

    result = check_in_this_process(installed_old_run(tmp_path))
    assert result["ok"], result
