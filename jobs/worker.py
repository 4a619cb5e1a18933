"""Run one claimed job: ``python -m jobs.worker JOB_ID`` (started by the supervisor).

The training core reports through :class:`JobReporter`, which buffers metric rows and
writes them with the progress in one short transaction about once a second, so the
database never slows training. A heartbeat thread keeps the job's row fresh through
long phases without steps (loading, evaluation, export) and picks up cancel requests.
Whatever happens, the job ends succeeded, cancelled or failed with a message the
user can act on; the traceback goes to ``error_detail`` and the job's log file.

Cancel works in every phase: the training loop polls for it at each step; in phases
without steps (model loading, evaluation, feature computation) the heartbeat thread,
once it has seen the request and given the loop ``STOP_GRACE_SECONDS``, sends the worker
SIGTERM, which :class:`StopSignal` turns into an exception in the main thread while
training runs (the supervisor sends SIGTERM too, and SIGKILL only after a further grace).

A finished run's outcome is written to ``outcome.json`` and then recorded with retries;
the checkpoint is deleted only once success is in the database. A worker that cannot
record it exits with ``EXIT_NOT_RECORDED``, leaving both, so the supervisor records the
success from the file (or, failing that, the job can be resumed).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from sqlalchemy import insert, select, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from backend.errors import WorkbenchError
from backend.settings import Settings, apply_environment
from backend.training.callbacks import Callback, EpochInfo, LayerInfo, StepInfo, TrainingCancelled
from jobs import queue
from jobs.db import Database, retry
from jobs.runner import EXIT_NOT_RECORDED, process_start_time
from jobs.schema import CANCELLED, FAILED, METRIC_COLUMNS, RUNNING, SUCCEEDED, Job, Metric, utcnow

FLUSH_SECONDS = 1.0
HEARTBEAT_SECONDS = 5.0
CANCEL_POLL_SECONDS = 1.0  # the heartbeat thread reads the cancel flag this often
STOP_GRACE_SECONDS = 3.0  # time the training loop gets to stop at a step before SIGTERM
RECORD_ATTEMPTS = 10  # the final write: about two minutes of retries on top of the busy timeouts
OOM_MESSAGE = "ran out of memory: try a smaller batch size or max length, or 4-bit quantization"


class JobLog:
    """Appends timestamped lines to the job's log file (shared with the worker's stderr)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        """Append ``message``; a full disk is retried briefly, then the line is dropped (a log
        line is never worth failing or hanging the job for)."""
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        text = "".join(f"{stamp} {line}\n" for line in message.splitlines() or [""])

        def append() -> None:
            self._file.write(text)
            self._file.flush()

        with self._lock:
            try:
                retry(append, what="writing the job log", attempts=3, first_delay=0.2)
            except OSError as exc:
                print(f"could not write the job log ({exc}): {message}", file=sys.stderr)

    def close(self) -> None:
        self._file.close()


def beat(db: Database, job_id: int, values: dict[str, Any], rows: list[dict[str, Any]]) -> bool:
    """Write buffered metric rows and job fields; True if the job should stop.

    It should stop when cancel was requested or the job is no longer running (e.g. a
    supervisor declared it dead): either way nobody wants its result any more.
    """
    with db.write() as session:
        if rows:
            session.execute(insert(Metric), rows)
        result = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == RUNNING)
            .values(heartbeat_at=utcnow(), **values)
            .execution_options(synchronize_session=False)
        )
        cancel_at = session.scalar(select(Job.cancel_requested_at).where(Job.id == job_id))
    return result.rowcount == 0 or cancel_at is not None


class JobReporter(Callback):
    """The training callback: metrics and progress into the database, lines into the log."""

    def __init__(self, db: Database, job_id: int, log: JobLog) -> None:
        self.db, self.job_id, self.log = db, job_id, log
        self.cancel = threading.Event()
        self._rows: list[dict[str, Any]] = []
        self._fields: dict[str, Any] = {}
        self._last_flush = time.monotonic()
        self._first_step: int | None = None
        self.rows_written = 0

    def on_start(self, info: dict[str, Any]) -> None:
        self._fields.update(device=info.get("device"), total_steps=info.get("total_steps"))
        if info.get("total_epochs"):  # "auto" epochs are known once the data is loaded
            self._fields["total_epochs"] = info["total_epochs"]
        self.log.write(f"start: {json.dumps(info)}")
        self.flush()

    def on_step(self, info: StepInfo) -> None:
        now = time.time()
        for name, value in (
            ("train_loss", info.loss),
            ("learning_rate", info.lr),
            ("samples_per_second", info.samples_per_second),
        ):
            self._add(info.step, info.epoch, name, value, now)
        if self._first_step is None:
            self._first_step = info.step  # a resumed run starts past step 1
        done = info.step - self._first_step + 1
        eta = info.elapsed_seconds / done * (info.total_steps - info.step)
        self._fields.update(
            step=info.step,
            total_steps=info.total_steps,
            epoch=info.epoch,
            progress=min(info.step / max(info.total_steps, 1), 1.0),
            eta_seconds=round(eta, 1),
        )
        if time.monotonic() - self._last_flush >= FLUSH_SECONDS:
            self.flush()

    def on_epoch(self, info: EpochInfo) -> None:
        now, m = time.time(), info.metrics
        self._add(info.step, info.epoch, "eval_accuracy", m["accuracy"], now)
        self._add(info.step, info.epoch, "eval_macro_f1", m["macro_f1"], now)
        self._add(info.step, info.epoch, "eval_loss", m["eval_loss"], now)
        self._add(info.step, info.epoch, "epoch_train_loss", info.train_loss, now)
        self._fields.update(epoch=info.epoch, total_epochs=info.total_epochs)
        self.flush()

    def on_layer(self, info: LayerInfo) -> None:
        # TODO(layer column): stored in the epoch column until the schema has a layer field.
        now, m = time.time(), info.metrics
        self._add(info.done, info.layer, "layer_accuracy", m["accuracy"], now)
        self._add(info.done, info.layer, "layer_macro_f1", m["macro_f1"], now)
        self._fields.update(epoch=info.done, total_epochs=info.total)
        self._fields["progress"] = info.done / max(info.total, 1)  # a sweep's progress is by layer
        self.flush()

    def on_checkpoint(self, epoch: int, path: str) -> None:
        self._fields["checkpoint_epoch"] = epoch
        self.log.write(f"checkpoint: epoch {epoch} saved")
        self.flush()

    def on_log(self, message: str) -> None:
        self.log.write(message)

    def should_cancel(self) -> bool:
        return self.cancel.is_set()

    def expect_epochs(self, total_epochs: int) -> None:
        """Known before the first epoch ends, so progress reads "epoch 1/3" from the start."""
        self._fields["total_epochs"] = total_epochs

    def _add(self, step: int, epoch: int | None, name: str, value: float, at: float) -> None:
        if not math.isfinite(value):
            return  # a diverged loss (nan/inf) has no place on a curve, nor in a NOT NULL column
        self._rows.append(
            {
                "job_id": self.job_id,
                "step": step,
                "epoch": epoch,
                "name": name,
                "value": float(value),
                "time": at,
            }
        )

    def flush(self) -> None:
        """One short transaction: buffered metrics + progress + heartbeat; reads cancel."""
        rows, fields = self._rows, dict(self._fields)
        self._rows, self._last_flush = [], time.monotonic()
        try:
            stop = beat(self.db, self.job_id, fields, rows)
        except OperationalError as exc:  # busy or locked: must not fail the run, retry later
            self._rows = rows + self._rows
            self.log.write(f"warning: could not write progress ({exc.__class__.__name__}); will retry")
            return
        except SQLAlchemyError as exc:  # anything else would fail again: drop this batch
            self.log.write(f"warning: dropped {len(rows)} metric rows: {exc.__class__.__name__}")
            return
        self.rows_written += len(rows)
        if stop:
            self.cancel.set()


def stop_wanted(db: Database, job_id: int) -> bool:
    """A read: was cancel requested, or is the job no longer running?"""
    with db.read() as session:
        row = session.execute(select(Job.status, Job.cancel_requested_at).where(Job.id == job_id)).first()
    return row is None or row.status != RUNNING or row.cancel_requested_at is not None


class StopRequested(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM while training runs. A BaseException, so that
    library code catching ``Exception`` (loaders with fallbacks) cannot swallow it."""


class StopSignal:
    """Turns SIGTERM into :class:`StopRequested` in the main thread, only while armed.

    Armed around training alone: a SIGTERM while the outcome is being recorded is only
    noted, so it can never interrupt that write. Python runs signal handlers in the main
    thread between bytecodes, so the armed flag (set only there) needs no lock.
    """

    def __init__(self) -> None:
        self.armed = False
        self.received = False

    def install(self) -> StopSignal:
        signal.signal(signal.SIGTERM, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        if self.armed:
            self.armed = False  # once: the cancel that follows must be recorded undisturbed
            raise StopRequested("stop requested (SIGTERM)")

    @contextlib.contextmanager
    def armed_while(self) -> Iterator[None]:
        """Raise on SIGTERM inside the block (at once if one came before it)."""
        if self.received:
            raise StopRequested("stop requested (SIGTERM) before training started")
        self.armed = True
        try:
            yield
        finally:
            self.armed = False


def signal_self() -> None:
    """SIGTERM to this worker: what the supervisor would send, sent sooner."""
    os.kill(os.getpid(), signal.SIGTERM)


class Heartbeat(threading.Thread):
    """Keeps ``heartbeat_at`` fresh and notices cancel requests between steps.

    Once it sees a stop request it sets ``cancel`` (the training loop stops at its next
    step); if training has not stopped ``STOP_GRACE_SECONDS`` later (a phase without
    steps), it calls ``interrupt`` once.
    """

    def __init__(
        self, db: Database, job_id: int, cancel: threading.Event, interrupt: Callable[[], None] | None = None
    ) -> None:
        super().__init__(name=f"heartbeat-{job_id}", daemon=True)
        self.db, self.job_id, self.cancel, self.interrupt = db, job_id, cancel, interrupt
        self._stopped = threading.Event()

    def run(self) -> None:
        last_beat, stop_seen, interrupted = time.monotonic(), None, False
        while not self._stopped.wait(CANCEL_POLL_SECONDS):
            try:
                if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                    last_beat, wanted = time.monotonic(), beat(self.db, self.job_id, {}, [])
                else:
                    wanted = stop_wanted(self.db, self.job_id)
            except SQLAlchemyError:
                continue  # the next beat retries; the supervisor tolerates a missed one
            if wanted:
                self.cancel.set()
                stop_seen = stop_seen or time.monotonic()
            late = stop_seen is not None and time.monotonic() - stop_seen >= STOP_GRACE_SECONDS
            if late and not interrupted and self.interrupt is not None and not self._stopped.is_set():
                interrupted = True
                self.interrupt()

    def stop(self) -> None:
        self._stopped.set()


def is_out_of_memory(exc: BaseException) -> bool:
    """CPU or GPU out-of-memory, however PyTorch or Python phrased it."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(
        phrase in text for phrase in ("out of memory", "not enough memory", "can't allocate memory")
    )


def explain_failure(exc: BaseException) -> tuple[str, str]:
    """(message for the user, kind): kind is memory, user or internal."""
    if is_out_of_memory(exc):
        return OOM_MESSAGE, "memory"
    if isinstance(exc, WorkbenchError):
        return str(exc), "user"
    first_line = (str(exc).strip().splitlines() or [""])[0][:300]
    message = (
        f"training failed with {type(exc).__name__}: {first_line} "
        "(the traceback is in the job's error detail and log)"
    )
    return message, "internal"


def final_fields(summary: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """Job columns for a finished run: metrics, the summary and the best epoch's detail."""
    values = {key: summary.get(key) for key in METRIC_COLUMNS}
    metrics_file = out_dir / "metrics.json"
    best = json.loads(metrics_file.read_text()).get("best") if metrics_file.is_file() else None
    evaluation = None
    if best:
        per_class = best.get("per_class") or {}
        evaluation = {
            "labels": list(per_class),
            "per_class": per_class,
            "confusion_matrix": best.get("confusion_matrix"),
            "best_epoch": best.get("epoch"),
        }
    return {
        **values,
        "summary": summary,
        "evaluation": evaluation,
        "progress": 1.0,
        "device": summary.get("device"),
    }


def train(job: Job, settings: Settings, reporter: JobReporter) -> dict[str, Any]:
    """Run the training core for ``job`` (checkpoints per epoch, resume if asked)."""
    from backend.run import run_training
    from backend.training.config import TrainConfig

    cfg = TrainConfig.from_dict(job.config)
    out_dir = Path(job.artifact_dir or settings.artifacts_dir / f"job-{job.id}")
    probe = cfg.method == "probe"  # trains on cached features in seconds: no checkpoints
    resume = Path(job.resume_checkpoint) if job.resume_checkpoint and not probe else None
    if resume is not None:
        reporter.log.write(f"resuming from the checkpoint in {resume}")
    if not probe and isinstance(cfg.epochs, int):
        reporter.expect_epochs(cfg.effective_epochs)
    return run_training(
        cfg,
        out_dir,
        reporter,
        models_cache=settings.models_cache,
        feature_cache_dir=settings.feature_cache_dir,
        checkpoint_dir=None if probe else out_dir / "checkpoint",
        resume_from=resume,
    )


def run_job(db: Database, job: Job, settings: Settings, log: JobLog, stop: StopSignal | None = None) -> int:
    """Train and record the outcome; the worker's exit code (0: recorded, see ``main``)."""
    reporter = JobReporter(db, job.id, log)
    heartbeat = Heartbeat(db, job.id, reporter.cancel, signal_self if stop is not None else None)
    heartbeat.start()
    try:
        with stop.armed_while() if stop is not None else contextlib.nullcontext():
            summary = train(job, settings, reporter)
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
    return record_success(db, job, summary, reporter, log)


def exit_code(recorded: bool) -> int:
    """0 once the outcome is recorded; 1 when something else had ended the job first."""
    return 0 if recorded else 1


def record_success(
    db: Database, job: Job, summary: dict[str, Any], reporter: JobReporter, log: JobLog
) -> int:
    """Hand the outcome to disk, record it with retries, and only then drop the checkpoint.

    The log line comes first: whoever sees the job succeeded must find it in the log.
    """
    out_dir = Path(summary.get("artifact_dir") or job.artifact_dir or "")
    values = final_fields(summary, out_dir)
    try:
        retry(lambda: queue.write_outcome(out_dir, values), what="saving the outcome", attempts=3)
    except OSError as exc:  # the database write below may still work
        log.write(f"warning: could not save {queue.OUTCOME_FILE} ({exc})")
    log.write(
        f"succeeded: accuracy {summary.get('accuracy'):.4f}, {reporter.rows_written} metric rows written"
    )
    try:
        recorded = queue.finish(
            db,
            job.id,
            SUCCEEDED,
            attempts=RECORD_ATTEMPTS,
            on_retry=lambda exc, delay: log.write(f"warning: could not record success yet ({exc}); retrying"),
            **values,
        )
    except (SQLAlchemyError, OSError) as exc:
        log.write(
            f"could not record success in the database ({exc}); {queue.OUTCOME_FILE} and the checkpoint "
            f"are kept in {out_dir}, so the supervisor can record it, or the job can be resumed"
        )
        return EXIT_NOT_RECORDED
    if not recorded:
        log.write("note: the job had already been ended elsewhere; this outcome was not recorded")
        return 1
    queue.tidy_succeeded(out_dir)
    return 0


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
    log = JobLog(Path(job.log_path or settings.artifacts_dir / f"job-{job_id}" / "job.log"))
    pid, host = os.getpid(), socket.gethostname()
    started = process_start_time(pid)
    retry(
        lambda: queue.update_running(
            db, job_id, worker_pid=pid, worker_host=host, worker_started=started, heartbeat_at=utcnow()
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
