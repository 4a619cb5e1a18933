"""Run one claimed job: ``python -m jobs.worker JOB_ID`` (started by the supervisor).

The worker records itself on the job's row, trains, and ends the job succeeded,
cancelled or failed with a message the user can act on; the traceback goes to
``error_detail`` and the job's log file. Its parts:

- :mod:`jobs.reporting`: the training callback that streams metrics and progress into
  the database (one short write about once a second) and lines into the log;
- :mod:`jobs.heartbeat`: the heartbeat thread and the SIGTERM handling that make cancel
  work in every phase, with or without training steps;
- :mod:`jobs.outcome`: failures explained for the user, and a success handed to
  ``outcome.json`` before it is recorded, so that it is never lost;
- :mod:`jobs.trackers`: the optional copy of config and metrics to TensorBoard / MLflow.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from backend.settings import Settings, apply_environment, artifact_root_problem, host_name
from backend.training.callbacks import TrainingCancelled, TrialPruned
from jobs import queue
from jobs.db import Database, retry
from jobs.heartbeat import Heartbeat, StopSignal, signal_self
from jobs.outcome import RECORD_ATTEMPTS, exit_code, explain_failure, record_success
from jobs.reporting import JobLog, JobReporter
from jobs.runner import CLUSTER_JOB_ENV, process_start_time
from jobs.schema import CANCELLED, FAILED, PRUNED, RUNNING, Job, Sweep, utcnow
from jobs.trackers import open_trackers


def train(job: Job, settings: Settings, reporter: JobReporter) -> dict[str, Any]:
    """Run the training core for ``job`` (checkpoints per epoch, resume if asked)."""
    # Deferred for start-up: torch and transformers load once the heartbeat is running.
    from backend.methods import registry
    from backend.run import run_training
    from backend.training.config import TrainConfig

    cfg = TrainConfig.from_dict(job.config)
    out_dir = Path(job.artifact_dir or settings.artifacts_dir / f"job-{job.id}")
    # A method without checkpoints (the probe: it retrains from cached features in seconds)
    # is never resumed, and its runner reports its own epoch count.
    resumable = registry.get(cfg.method).resumable
    resume = Path(job.resume_checkpoint) if job.resume_checkpoint and resumable else None
    if resume is not None:
        reporter.log.write(f"resuming from the checkpoint in {resume}")
    if resumable and isinstance(cfg.epochs, int):
        reporter.expect_epochs(cfg.effective_epochs)
    # TensorBoard / MLflow, where switched on: they see every event after the reporter does.
    with open_trackers(settings, job, cfg, reporter, reporter.log) as callback:
        summary = run_training(
            cfg,
            out_dir,
            callback,
            models_cache=settings.models_cache,
            feature_cache_dir=settings.feature_cache_dir,
            checkpoint_dir=out_dir / "checkpoint" if resumable else None,
            resume_from=resume,
        )
        callback.summary(summary)
    return summary


def trial_reporter(db: Database, job: Job, log: JobLog) -> JobReporter | None:
    """A search trial's reporter (its evaluations go to the study's pruner), else None."""
    if job.sweep_id is None or job.trial_number is None:
        return None
    from jobs.sweeps import TrialReporter

    with db.read() as session:
        sweep = session.get(Sweep, job.sweep_id)
    if sweep is None or sweep.kind != "search":
        return None
    return TrialReporter(db, job, sweep, log)


def run_job(db: Database, job: Job, settings: Settings, log: JobLog, stop: StopSignal | None = None) -> int:
    """Train and record the outcome; the worker's exit code (0: recorded, see ``main``)."""
    reporter = trial_reporter(db, job, log) or JobReporter(db, job.id, log)
    heartbeat = Heartbeat(db, job.id, reporter.cancel, signal_self if stop is not None else None)
    heartbeat.start()
    try:
        with stop.armed_while() if stop is not None else contextlib.nullcontext():
            summary = train(job, settings, reporter)
    except TrialPruned as exc:
        heartbeat.stop()
        reporter.flush()
        log.write(str(exc))
        return exit_code(queue.finish(db, job.id, PRUNED, attempts=RECORD_ATTEMPTS, error=str(exc)))
    except (TrainingCancelled, KeyboardInterrupt) as exc:
        heartbeat.stop()
        reporter.flush()
        log.write(f"cancelled: {exc}".rstrip(": "))
        return exit_code(queue.finish(db, job.id, CANCELLED, attempts=RECORD_ATTEMPTS))
    except Exception as exc:  # noqa: BLE001 - every failure must end the job with a message
        heartbeat.stop()
        detail = traceback.format_exc()
        message, kind = explain_failure(exc)
        log.write(f"failed: {message}\n{detail}")
        reporter.flush()
        recorded = queue.finish(
            db, job.id, FAILED, attempts=RECORD_ATTEMPTS, error=message, error_kind=kind, error_detail=detail
        )
        return exit_code(recorded)
    heartbeat.stop()
    reporter.flush()
    return record_success(db, job, summary, reporter.rows_written, log)


def cluster_gpu() -> int | None:
    """The one GPU this process may see, as CUDA_VISIBLE_DEVICES names it (Ray sets it)."""
    if not os.environ.get(CLUSTER_JOB_ENV):
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    return int(visible) if visible.isdigit() else None


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit 0 once the job's outcome is recorded (or there was nothing to do),
    1 if something else had ended the job, ``EXIT_NOT_RECORDED`` if success could not be."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m jobs.worker JOB_ID", file=sys.stderr)
        return 2
    job_id = int(args[0])
    stop = StopSignal().install()  # before anything slow: a cancel may come at any moment
    settings = Settings.from_env()
    apply_environment(settings)
    db = Database(settings.db_url)
    with db.read() as session:
        job = session.get(Job, job_id)
    if job is None or job.status != RUNNING:
        print(f"job {job_id} is not claimed for running; nothing to do", file=sys.stderr)
        return 0
    # On a cluster this node may not mount the shared artifact root: say so, and run nothing.
    problem = artifact_root_problem(Path(job.artifact_dir or settings.artifacts_dir / "x").parent)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        queue.finish(db, job_id, FAILED, attempts=RECORD_ATTEMPTS, error=problem, error_kind="user")
        return 0
    log = JobLog(Path(job.log_path or settings.artifacts_dir / f"job-{job_id}" / "job.log"))
    pid, host = os.getpid(), host_name()
    started = process_start_time(pid)
    # A GPU that a cluster (Ray) gave this process, for the Runs view's Where column; a
    # local supervisor already recorded the one it chose.
    gpu = {"gpu": cluster_gpu()} if job.gpu is None and cluster_gpu() is not None else {}
    retry(
        lambda: queue.update_running(
            db, job_id, worker_pid=pid, worker_host=host, worker_started=started, heartbeat_at=utcnow(), **gpu
        ),
        what=f"job {job_id}: recording the worker",
    )
    log.write(f"worker started: job {job_id}, pid {pid} on {host}")
    try:
        return run_job(db, job, settings, log, stop)
    finally:
        log.close()
        db.dispose()


if __name__ == "__main__":
    sys.exit(main())
