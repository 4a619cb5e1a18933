"""Experiment trackers: a job's config and metrics also go to TensorBoard and/or MLflow.

Off unless switched on (``Settings.tensorboard_dir`` / ``Settings.mlflow_uri``). The worker
trains inside :func:`open_trackers`, whose :class:`TrackedCallback` hands every event to
the job's reporter first and then to each tracker. The database stays the one truth about
a job; a tracker is a copy for the tools people already use, so it may never fail or slow
the job: each runs in its own thread (opening MLflow's store takes seconds), and its first
error is one warning line in the job log, after which that tracker is dropped.

The back ends are in :mod:`jobs.tracker_backends`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from backend.settings import Settings
from backend.training.callbacks import (
    Callback,
    EpochInfo,
    LayerInfo,
    StepInfo,
    TrainingCancelled,
    TrialPruned,
)
from jobs.reporting import JobLog
from jobs.schema import Job

FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"  # MLflow's words for how a run ended
# How long closing waits for a tracker's thread (normally it is done in milliseconds; longer
# only while it is still opening its store, or its server hangs): a finished run's figures
# are worth a wait; a cancel must end before the supervisor's SIGTERM, 15 s after the request.
CLOSE_TIMEOUT_S = {FINISHED: 60.0, FAILED: 30.0, KILLED: 10.0}
# Settings whose stored value is a request ("auto", None = the method's default): logged
# under this name; the value the run trained with is logged under the plain name at start.
REQUESTED = {"lr": "lr_setting", "epochs": "epochs_setting", "device": "device_setting"}
START_PARAMS = {  # what a run reports at start (or in its summary) -> the param's name
    "lr": "lr",
    "total_epochs": "epochs",
    "epochs": "epochs",  # the summary's name for it
    "total_steps": "total_steps",
    "device": "device",
    "train_rows": "train_rows",
    "eval_rows": "eval_rows",
}


class Tracker(Protocol):
    """What a back end does; called from its own thread only, in order."""

    def params(self, values: dict[str, Any]) -> None: ...

    def scalars(self, step: int, values: dict[str, float]) -> None: ...

    def summary(self, step: int, values: dict[str, float]) -> None: ...

    def close(self, status: str) -> None: ...


class ThreadedTracker:
    """Runs a tracker (built by ``make`` in the thread) off the training thread.

    Calls are queued and replayed in order. The first exception writes one warning line to
    the job log and drops everything after it, so a full disk or a bad URI costs the job
    nothing but that line.
    """

    def __init__(self, label: str, make: Callable[[], Tracker], log: JobLog) -> None:
        self.label, self.log = label, log
        self._calls: queue.SimpleQueue[tuple[str, tuple[Any, ...]] | None] = queue.SimpleQueue()
        # A daemon: a tracker stuck on a dead server must not keep the worker process alive.
        self._thread = threading.Thread(target=self._run, args=(make,), name=f"tracker-{label}", daemon=True)
        self._thread.start()

    def call(self, method: str, *args: Any) -> None:
        self._calls.put((method, args))

    def close(self, status: str) -> None:
        """End the run as ``status`` and wait (briefly) for the thread to write it."""
        self._calls.put(("close", (status,)))
        self._calls.put(None)
        self._thread.join(CLOSE_TIMEOUT_S[status])
        if self._thread.is_alive():
            self.log.write(f"warning: {self.label} did not finish writing in time; the job carries on")

    def _run(self, make: Callable[[], Tracker]) -> None:
        tracker: Tracker | None = None
        while (item := self._calls.get()) is not None:
            if tracker is None and item[0] == "close":
                continue  # never opened (it failed): nothing to close
            try:
                tracker = tracker or make()
                getattr(tracker, item[0])(*item[1])
            except Exception as exc:  # noqa: BLE001 - any tracker error: warn once, then drop it
                self.log.write(f"warning: {self.label} logging stopped, the job carries on: {exc!r}"[:500])
                if tracker is not None and item[0] != "close":
                    with contextlib.suppress(Exception):  # mark its run failed, if it still can
                        tracker.close(FAILED)
                return


def _start_params(info: dict[str, Any]) -> dict[str, Any]:
    """The resolved settings a run reports at start (or, the probe, in its summary)."""
    return {name: info[key] for key, name in START_PARAMS.items() if info.get(key) is not None}


def _finite(values: dict[str, Any]) -> dict[str, float]:
    """The real numbers among ``values`` (a diverged loss or a missing figure is left out)."""
    return {
        key: float(value)
        for key, value in values.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


class TrackedCallback(Callback):
    """The job's reporter first, then the same events to every tracker."""

    def __init__(self, inner: Callback, trackers: list[ThreadedTracker]) -> None:
        self.inner, self.trackers = inner, trackers
        self._logged: set[str] = set()  # MLflow params are write-once: each name goes once
        self._last_step = 0

    def params(self, values: dict[str, Any]) -> None:
        new = {key: value for key, value in values.items() if key not in self._logged}
        self._logged.update(new)
        if new:
            self._send("params", new)

    def on_start(self, info: dict[str, Any]) -> None:
        self.inner.on_start(info)
        self.params(_start_params(info))

    def on_step(self, info: StepInfo) -> None:
        self.inner.on_step(info)
        self._last_step = info.step
        if not self.trackers:
            return  # off (the default): nothing to build per step
        values = {
            "train/loss": info.loss,
            "train/learning_rate": info.lr,
            "train/samples_per_second": info.samples_per_second,
            "train/tokens_per_second": info.tokens_per_second,  # None for a probe: left out
        }
        self._send("scalars", info.step, _finite(values))

    def on_epoch(self, info: EpochInfo) -> None:
        values = {
            f"eval/{k.removeprefix('eval_')}": v for k, v in info.scalars.items()
        }  # eval/accuracy, eval/loss
        try:
            self.inner.on_epoch(info)  # a search trial's reporter may prune the trial here ...
        finally:  # ... after an evaluation the trackers should still show
            self._send("scalars", info.step, _finite({**values, "train/epoch_loss": info.train_loss}))

    def on_layer(self, info: LayerInfo) -> None:
        self.inner.on_layer(info)
        # a probe's layer sweep: the layer is the x axis
        values = {f"layer/{k}": v for k, v in info.scalars.items() if k != "eval_loss"}
        self._send("scalars", info.layer, _finite(values))

    def on_checkpoint(self, epoch: int, path: str) -> None:
        self.inner.on_checkpoint(epoch, path)

    def on_log(self, message: str) -> None:
        self.inner.on_log(message)

    def should_cancel(self) -> bool:
        return self.inner.should_cancel()

    def summary(self, summary: dict[str, Any]) -> None:
        """The finished run's figures (accuracy, macro_f1, trainable_params, train_seconds, ...)."""
        # A run that starts nothing step by step (the probe) reports its rate and epochs here.
        self.params(_start_params(summary))
        self._send("summary", self._last_step, _finite(summary))

    def _send(self, method: str, *args: Any) -> None:
        for tracker in self.trackers:
            tracker.call(method, *args)


def job_params(job: Job, cfg: Any) -> dict[str, Any]:
    """The run's settings as flat ``name -> value`` pairs: the training config with the
    method's settings (defaults filled in) as ``method.<name>``, and the job's identity."""
    config = {key: value for key, value in cfg.to_dict().items() if key != "method_config"}
    values = {REQUESTED.get(key, key): value for key, value in config.items()}
    try:
        settings = dataclasses.asdict(cfg.method_settings())
    except Exception:  # noqa: BLE001 - invalid settings: training reports that, here the raw ones do
        settings = dict(cfg.method_config)
    values |= {f"method.{key}": value for key, value in settings.items()}
    return {**values, "job_id": job.id, "job_name": job.name}


def job_trackers(settings: Settings, job: Job, log: JobLog) -> list[ThreadedTracker]:
    """A thread per tracker switched on in ``settings`` (none by default)."""
    from jobs.tracker_backends import MlflowTracker, TensorBoardTracker

    trackers = []
    if settings.tensorboard_dir is not None:
        folder = settings.tensorboard_dir / f"job-{job.id}"
        trackers.append(ThreadedTracker("TensorBoard", lambda: TensorBoardTracker(folder), log))
    if settings.mlflow_uri is not None:
        uri, name = settings.mlflow_uri, f"job-{job.id} {job.name}"
        tags = {"workbench.job_id": str(job.id), "workbench.method": job.method}
        if job.sweep_id is not None:
            tags["workbench.sweep_id"] = str(job.sweep_id)
        trackers.append(ThreadedTracker("MLflow", lambda: MlflowTracker(uri, name, tags), log))
    return trackers


@contextlib.contextmanager
def open_trackers(
    settings: Settings, job: Job, cfg: Any, reporter: Callback, log: JobLog
) -> Iterator[TrackedCallback]:
    """Train inside this: yields the callback to train with; ends every tracker's run as
    FINISHED, KILLED (cancelled, pruned, interrupted) or FAILED, however the block ends."""
    tracked = TrackedCallback(reporter, job_trackers(settings, job, log))
    if tracked.trackers:
        tracked.params(job_params(job, cfg))  # logged first: a run that fails early still says what it was
    status = FAILED
    try:
        yield tracked
        status = FINISHED
    except (TrainingCancelled, TrialPruned, KeyboardInterrupt):
        status = KILLED
        raise
    finally:
        for tracker in tracked.trackers:
            tracker.close(status)
