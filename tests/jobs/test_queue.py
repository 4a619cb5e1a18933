"""Jobs through real worker processes: cancel, killed workers, failures, resume."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from backend.errors import ConfigError
from backend.training.checkpoint import last_epoch
from jobs.outcome import OOM_MESSAGE, explain_failure
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import long_job, paced_job, quick_job, wait_for, wait_running_step, wait_status


def test_cancel_queued_at_once_and_running_within_10_seconds(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    running = bench.submit(long_job(data_dir / "long.csv"))
    queued = bench.submit(quick_job(data_dir / "tiny.csv"))
    assert bench.cancel(queued)["status"] == "cancelled"
    supervisors()
    wait_running_step(bench, running)
    with pytest.raises(ConfigError, match="cancel it first"):
        bench.delete(running)
    asked = time.monotonic()
    assert bench.cancel(running)["cancel_requested"] is True
    job = wait_status(bench, running, timeout=10)
    assert job["status"] == "cancelled"
    assert time.monotonic() - asked < 10
    assert bench.get_job(queued)["started"] is None  # never ran
    with pytest.raises(ConfigError, match="already finished"):
        bench.cancel(running)


def test_sigkill_of_a_worker_fails_its_job_and_the_queue_moves_on(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    doomed = bench.submit(long_job(data_dir / "long.csv"))
    after = bench.submit(quick_job(data_dir / "tiny.csv", method="probe"))
    supervisors()
    job = wait_running_step(bench, doomed)
    os.kill(job["worker_pid"], signal.SIGKILL)
    failed = wait_status(bench, doomed, timeout=10)
    assert failed["status"] == "failed"
    assert "worker stopped unexpectedly (killed by signal 9 SIGKILL" in failed["error"]
    assert failed["error_kind"] == "crash"
    assert any("worker stopped unexpectedly" in line for line in bench.get_job(doomed)["log"])
    assert wait_status(bench, after)["status"] == "succeeded"


def test_bad_data_fails_with_the_data_error_text(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    job_id = bench.submit(quick_job(data_dir / "tiny.csv"))
    # Damage the stored copy after submission: only the worker can notice now.
    stored = Path(bench.get_job(job_id)["config"]["data"])
    pd.DataFrame({"text": ["only one class"] * 5, "label": ["a"] * 5}).to_csv(stored, index=False)
    supervisors()
    job = wait_status(bench, job_id)
    assert job["status"] == "failed"
    assert job["error_kind"] == "user"
    assert "class" in job["error"]  # the DataError's own words, not a traceback
    assert "Traceback" not in job["error"]
    assert "Traceback" in job["error_detail"]


def test_out_of_memory_gets_advice() -> None:
    message, kind = explain_failure(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert (message, kind) == (OOM_MESSAGE, "memory")
    assert explain_failure(MemoryError())[0] == OOM_MESSAGE
    assert explain_failure(ConfigError("bad rank"))[0] == "bad rank"
    assert "ValueError: boom" in explain_failure(ValueError("boom"))[0]


def test_resume_continues_after_the_checkpoint(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    first = bench.submit(paced_job(data_dir, epochs=3))
    supervisors()

    def checkpointed() -> dict | None:
        job = bench.get_job(first, log_tail=0)
        assert job["status"] in ("queued", "running"), job["error"]
        return job if (job["checkpoint_epoch"] or 0) >= 1 else None

    # Killed right after its first checkpoint: two epochs of margin before it could finish.
    os.kill(wait_for(checkpointed, 180, "the first checkpoint", 0.05)["worker_pid"], signal.SIGKILL)
    crashed = wait_status(bench, first, timeout=60)  # a loaded machine reaps the worker late
    assert crashed["status"] == "failed"
    done = last_epoch(Path(crashed["artifact_dir"]) / "checkpoint")
    assert done in (1, 2)

    second = bench.resume(first)
    job = wait_status(bench, second)
    assert job["status"] == "succeeded", job["error"]
    assert job["resumed_from"] == first
    train_loss, evals = job["series"]["train_loss"], job["series"]["eval_accuracy"]
    assert evals[0][0] == done + 1  # its first logged epoch is the one after the checkpoint
    assert [epoch for epoch, _ in evals] == list(range(done + 1, 4))
    steps_per_epoch = job["total_steps"] // 3
    assert train_loss[0][0] == done * steps_per_epoch + 1  # the step count continues
    assert any("resuming from the checkpoint" in line for line in bench.get_job(second)["log"])
    assert not (Path(job["artifact_dir"]) / "checkpoint").exists()  # dropped once succeeded
    with pytest.raises(ConfigError, match="only failed or cancelled"):
        bench.resume(second)
