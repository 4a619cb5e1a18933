"""Experiment trackers: a real job logs to TensorBoard and MLflow when they are switched on
(read back with their own readers), nothing when they are off; a run ends FAILED or
KILLED as training does, and a broken tracker costs the job one warning line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from backend.settings import Settings
from backend.training.callbacks import Callback, EpochInfo, StepInfo, TrainingCancelled
from backend.training.config import TrainConfig
from jobs.reporting import JobLog
from jobs.runner import worker_environment
from jobs.schema import Job
from jobs.supervisor import Supervisor
from jobs.tracker_backends import EXPERIMENT, local_sqlite_path
from jobs.trackers import open_trackers
from service.api import Workbench
from tests.jobs.conftest import kill_workers, make_settings, quick_job, wait_status

# The trackers read the run, not the database: one engine (tests/jobs/conftest.py).
pytestmark = pytest.mark.engines("sqlite")


def run_job(settings: Settings, config: dict[str, Any]) -> dict[str, Any]:
    """Submit ``config``, run it with a supervisor of ``settings`` and return the finished job."""
    bench = Workbench(settings)
    job_id = bench.submit(config)
    supervisor = Supervisor(settings, max_concurrent=1, poll_seconds=0.2).start()
    try:
        return bench.get_job(wait_status(bench, job_id)["id"], log_tail=200)
    finally:
        supervisor.stop(kill_workers=True)
        kill_workers(settings)


def mlflow_runs(uri: str) -> list[Any]:
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None, f"no experiment {EXPERIMENT} in {uri}"
    return client.search_runs([experiment.experiment_id])


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar series in a TensorBoard run folder, read as TensorBoard reads it."""
    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_a_job_shows_up_in_tensorboard_and_mlflow(settings: Settings, data_dir: Path) -> None:
    settings = settings.with_trackers(tensorboard="on", mlflow="on")
    # fp32: the job's accuracy is then its best epoch's evaluation, to the last digit.
    config = quick_job(data_dir / "tiny.csv", precision="fp32", method_config={"rank": 2})
    job = run_job(settings, config)
    assert job["status"] == "succeeded", job["error"]
    trackers_said = [line for line in job["log"] if "TensorBoard" in line or "MLflow" in line]
    assert not [line for line in trackers_said if "warning:" in line], trackers_said

    curves = scalars(settings.data_dir / "tensorboard" / f"job-{job['id']}")
    assert {"train/loss", "train/learning_rate", "eval/accuracy", "final/accuracy"} <= set(curves)
    db = job["series"]  # the database is the truth: TensorBoard holds the same points (as float32)
    assert [s for s, _ in curves["train/loss"]] == [s for s, _ in db["train_loss"]]
    assert [v for _, v in curves["train/loss"]] == pytest.approx([v for _, v in db["train_loss"]], rel=1e-6)
    assert [v for _, v in curves["eval/accuracy"]] == pytest.approx([v for _, v in db["eval_accuracy"]])
    best = job["metrics"]["best_epoch"]
    assert curves["eval/accuracy"][best - 1][1] == pytest.approx(job["accuracy"], rel=1e-6)
    assert curves["final/accuracy"][0][1] == pytest.approx(job["accuracy"], rel=1e-6)

    (run,) = mlflow_runs(settings.mlflow_uri or "")
    assert run.info.run_name == f"job-{job['id']} {job['name']}"
    assert run.info.status == "FINISHED"
    assert run.data.tags["workbench.job_id"] == str(job["id"]) and run.data.tags["workbench.method"] == "lora"
    params = run.data.params
    assert params["method"] == "lora" and params["method.rank"] == "2" and params["batch_size"] == "16"
    assert float(params["lr"]) == pytest.approx(job["metrics"]["lr"]) and params["lr_setting"] == "None"
    assert params["epochs"] == "1" and params["job_id"] == str(job["id"])
    assert params["device"] == "cpu" and params["device_setting"] == "auto"
    metrics = run.data.metrics  # the latest value of each: the summary's figures
    assert metrics["accuracy"] == job["accuracy"] and metrics["macro_f1"] == job["macro_f1"]
    assert metrics["trainable_params"] == job["trainable_params"]
    assert metrics["train_seconds"] == job["train_seconds"]
    history = MlflowClient(tracking_uri=settings.mlflow_uri).get_metric_history(
        run.info.run_id, "eval/accuracy"
    )
    assert [m.value for m in sorted(history, key=lambda m: m.step)] == [v for _, v in db["eval_accuracy"]]


def test_trackers_are_off_unless_switched_on(settings: Settings, data_dir: Path) -> None:
    assert settings.tensorboard_dir is None and settings.mlflow_uri is None
    env = worker_environment(settings, None)  # a worker never inherits the app's own switches
    assert env["WORKBENCH_TENSORBOARD"] == "off" and env["WORKBENCH_MLFLOW"] == "off"
    job = run_job(settings, quick_job(data_dir / "tiny.csv", method="probe", epochs=2))
    assert job["status"] == "succeeded", job["error"]
    written = {p.name for p in settings.data_dir.rglob("*")}
    assert not written & {"tensorboard", "mlflow", "mlflow.db", "mlruns"}
    assert not any(name.startswith("events.out.tfevents") for name in written)


def _job() -> tuple[Job, TrainConfig]:
    cfg = TrainConfig(data="tiny.csv", method="lora", method_config={"rank": 4}, lr="auto")
    return Job(id=7, name="lora r=4 · tiny", method="lora", model=cfg.model, config=cfg.to_dict()), cfg


def _train_a_little(callback: Callback) -> None:
    callback.on_start({"lr": 1e-3, "total_epochs": 3, "total_steps": 9, "device": "cpu"})
    callback.on_step(StepInfo(1, 9, 1, loss=0.7, lr=1e-3, samples_per_second=5.0, elapsed_seconds=1.0))
    metrics = {"accuracy": 0.5, "macro_f1": 0.4, "eval_loss": float("nan")}
    callback.on_epoch(EpochInfo(1, 3, 3, metrics, train_loss=0.69, is_best=True))


@pytest.mark.parametrize(
    ("error", "status"), [(TrainingCancelled("stop"), "KILLED"), (OSError("disk"), "FAILED")]
)
def test_a_run_ends_as_training_ends(tmp_path: Path, error: Exception, status: str) -> None:
    settings = make_settings(tmp_path).with_trackers(tensorboard="on", mlflow="on")
    # The store exists, as after a first job: making a new one takes longer than a cancel waits.
    store = local_sqlite_path(settings.mlflow_uri or "")
    assert store is not None
    store.parent.mkdir(parents=True)
    MlflowClient(tracking_uri=settings.mlflow_uri).search_experiments()
    job, cfg = _job()
    log = JobLog(tmp_path / "job.log")
    with pytest.raises(type(error)), open_trackers(settings, job, cfg, Callback(), log) as callback:
        _train_a_little(callback)
        raise error  # the tracker must not swallow it: the worker records the job from it
    log.close()
    (run,) = mlflow_runs(settings.mlflow_uri or "")
    assert run.info.status == status
    assert run.data.params["lr"] == "0.001" and run.data.params["lr_setting"] == "auto"
    assert run.data.metrics["eval/accuracy"] == 0.5 and "eval/loss" not in run.data.metrics  # nan left out
    curves = scalars(settings.data_dir / "tensorboard" / "job-7")
    assert curves["train/loss"] == [(1, pytest.approx(0.7))]
    assert "warning" not in (tmp_path / "job.log").read_text()


def test_a_broken_tracker_costs_one_warning_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the event folder should go")
    settings = make_settings(tmp_path).with_(tensorboard_dir=blocker, mlflow_uri="nosuchstore://nowhere")
    job, cfg = _job()
    log = JobLog(tmp_path / "job.log")
    with open_trackers(settings, job, cfg, Callback(), log) as callback:
        for _ in range(3):
            _train_a_little(callback)
        callback.summary({"accuracy": 0.5})
    log.close()
    warnings = [line for line in (tmp_path / "job.log").read_text().splitlines() if "warning" in line]
    assert len(warnings) == 2, warnings
    assert any("TensorBoard logging stopped" in w for w in warnings)
    assert any("MLflow logging stopped" in w for w in warnings)
