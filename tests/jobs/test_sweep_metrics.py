"""A probe layer sweep run by the worker records each layer's result by layer, not by epoch.

The worker's job body runs in this process (no subprocess, no supervisor): a probe on
cached features of the default model takes seconds.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from sqlalchemy import select

from backend.settings import Settings
from jobs import queue
from jobs.reporting import JobLog
from jobs.schema import Job, Metric
from jobs.worker import run_job
from service.api import Workbench
from tests.jobs.conftest import quick_job
from tests.tiny_models import LAYERS

# What the worker writes per layer, not the engine: one engine (tests/jobs/conftest.py).
pytestmark = pytest.mark.engines("sqlite")


def test_a_probe_sweep_writes_each_layer_to_the_layer_column(
    bench: Workbench, settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    sweep = {"method": "probe", "method_config": {"sweep_layers": True}}
    job_id = bench.submit(quick_job(data_dir / "tiny.csv", **sweep))
    assert queue.claim_next(bench.db, "test", socket.gethostname()) == job_id
    with bench.db.read() as session:
        job = session.get(Job, job_id)
    assert job is not None
    log = JobLog(tmp_path / "job.log")
    try:
        assert run_job(bench.db, job, settings, log) == 0
    finally:
        log.close()

    with bench.db.read() as session:
        rows = session.execute(
            select(Metric.step, Metric.epoch, Metric.layer)
            .where(Metric.job_id == job_id, Metric.name == "layer_accuracy")
            .order_by(Metric.id)
        ).all()
    layers = list(range(LAYERS + 1))  # embeddings + the tiny BERT's layers
    assert [tuple(r) for r in rows] == [(layer + 1, None, layer) for layer in layers]

    detail = bench.get_job(job_id, log_tail=0)
    assert detail["status"] == "succeeded", detail["error"]
    assert [layer for layer, _ in detail["series"]["layer_accuracy"]] == layers
    assert [layer for layer, _ in detail["series"]["layer_macro_f1"]] == layers
    table = {row["layer"]: row["accuracy"] for row in detail["layer_accuracy"]}  # the run's summary
    assert dict(detail["series"]["layer_accuracy"]) == table
    assert not detail["series"]["eval_accuracy"]  # a sweep has no epoch curve
