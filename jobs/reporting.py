"""What a running job reports: metric rows and progress into the database, lines into its log.

The training core reports through :class:`JobReporter`, which buffers metric rows and
writes them with the progress in one short transaction about once a second (:func:`beat`),
so the database never slows training. The same write tells the worker whether to stop.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import insert, select, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError

from backend.training.callbacks import Callback, EpochInfo, LayerInfo, StepInfo
from jobs.db import Database, retry
from jobs.schema import RUNNING, Job, Metric, utcnow

FLUSH_SECONDS = 1.0
# A flush that finds the database locked waits out its busy timeout (1 s in the tests, longer in
# use) with the training loop stopped. Retried every FLUSH_SECONDS, that halved training or worse
# while another process held the lock: on a 2-core AVX2 machine one epoch of 540 steps had not
# ended after 3 minutes, where it takes seconds. So each failed flush doubles the wait before the
# next, up to this; the first that succeeds brings it back to FLUSH_SECONDS.
MAX_FLUSH_SECONDS = 30.0


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
        self._flush_every = FLUSH_SECONDS  # grows while the database stays locked
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
            ("tokens_per_second", info.tokens_per_second),
        ):
            if value is not None:  # a probe head's rows are features: it has no tokens
                self._add(info.step, name, value, now, epoch=info.epoch)
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
        if time.monotonic() - self._last_flush >= self._flush_every:
            self.flush()

    def on_epoch(self, info: EpochInfo) -> None:
        now = time.time()
        # eval_accuracy, eval_macro_f1 (a score: eval_spearman, ...), eval_loss, and eval_score:
        # the primary metric, whatever the task names it (what a regression run's chart draws)
        for name, value in info.scalars.items():
            series = name if name.startswith("eval_") else f"eval_{name}"
            self._add(info.step, series, value, now, epoch=info.epoch)
        if "score" in info.metrics:
            self._add(info.step, "eval_score", float(info.metrics["score"]), now, epoch=info.epoch)
        self._add(info.step, "epoch_train_loss", info.train_loss, now, epoch=info.epoch)
        self._fields.update(epoch=info.epoch, total_epochs=info.total_epochs)
        self.flush()

    def on_layer(self, info: LayerInfo) -> None:
        # One point per layer, in Metric.layer; ``step`` counts the layers done.
        now = time.time()
        for name, value in info.scalars.items():  # layer_accuracy, layer_macro_f1 (layer_spearman, ...)
            if name != "eval_loss":
                self._add(info.done, f"layer_{name}", value, now, layer=info.layer)
        if "score" in info.metrics:
            self._add(info.done, "layer_score", float(info.metrics["score"]), now, layer=info.layer)
        # The job row's epoch/total_epochs show a sweep's progress: layers done of all.
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

    def _add(
        self,
        step: int,
        name: str,
        value: float,
        at: float,
        *,
        epoch: int | None = None,
        layer: int | None = None,
    ) -> None:
        """Buffer one metric row: a curve's point by step and epoch, or a sweep's by layer."""
        if not math.isfinite(value):
            return  # a diverged loss (nan/inf) has no place on a curve, nor in a NOT NULL column
        self._rows.append(
            {
                "job_id": self.job_id,
                "step": step,
                "epoch": epoch,
                "layer": layer,
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
            self._flush_every = min(self._flush_every * 2, MAX_FLUSH_SECONDS)
            self.log.write(
                f"warning: could not write progress ({exc.__class__.__name__}); "
                f"will retry in {self._flush_every:g} s"
            )
            return
        except SQLAlchemyError as exc:  # anything else would fail again: drop this batch
            self.log.write(f"warning: dropped {len(rows)} metric rows: {exc.__class__.__name__}")
            return
        self._flush_every = FLUSH_SECONDS
        self.rows_written += len(rows)
        if stop:
            self.cancel.set()
