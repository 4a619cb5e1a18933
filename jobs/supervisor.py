"""The supervisor: claims queued jobs, starts one worker per job, reaps and enforces cancels.

Runs inside ``python app.py`` as a daemon thread (``Supervisor(settings).start()``) or
alone in the foreground (``python app.py worker`` -> ``run_forever()``). Any number of
supervisors may share one database: claims are atomic, and each announces itself in
the ``supervisors`` table (``jobs.supervisor_registry``) so that the others can tell a
job that is looked after from an orphan whose supervisor died.

Crash safety: each poll reaps this supervisor's workers, so one that dies without ending
its job (killed, out of memory) is marked failed at once; at start and every few seconds it
reconciles running jobs nobody looks after and hung workers here (``jobs.reconcile``).
A job never stays ``running`` forever: each step of a pass is guarded on its own (a locked
database fails one step, logged, and the next poll retries); a worker is forgotten only
once its end is recorded. A cancel asks the worker to stop (it polls), sends SIGTERM after
``cancel_grace`` (it records the job as cancelled), and SIGKILL ``kill_grace`` later.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

from backend.settings import Settings, host_name
from jobs import queue
from jobs.db import Database, is_transient, retry
from jobs.reconcile import Reconciler
from jobs.runner import Handle, Runner, describe_exit, gpu_count, make_runner
from jobs.schema import FAILED, Job, SupervisorRow, utcnow
from jobs.stopped_worker import end_stopped_worker
from jobs.supervisor_registry import (
    enter_process,
    fresh,
    leave_process,
    register_supervisor,
    remove_supervisor,
    supervisor_heartbeat,
)

log = logging.getLogger("jobs.supervisor")

POLL_SECONDS = 0.5
HOUSEKEEPING_SECONDS = 5.0
CANCEL_GRACE_SECONDS = 15.0  # a worker that ignores a cancel request this long gets SIGTERM
KILL_GRACE_SECONDS = 10.0  # ... and SIGKILL if it is still there this much later
HUNG_SECONDS = 30.0  # six missed worker heartbeats (jobs.heartbeat.HEARTBEAT_SECONDS is 5 s)


class Supervisor(Reconciler):
    """Runs the queue: at most ``max_concurrent`` jobs at once, each in its own process."""

    def __init__(
        self,
        settings: Settings,
        max_concurrent: int | None = None,
        *,
        runner: Runner | None = None,
        only_jobs: set[int] | None = None,
        only_sweeps: set[int] | None = None,
        poll_seconds: float = POLL_SECONDS,
        hung_seconds: float = HUNG_SECONDS,
        cancel_grace: float = CANCEL_GRACE_SECONDS,
        kill_grace: float = KILL_GRACE_SECONDS,
    ) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self.runner: Runner = runner or make_runner(settings)
        # GPU indices are ours to hand out on this host; a cluster places GPU jobs itself.
        self.gpus = 0 if self.runner.cluster_wide else gpu_count()
        self.max_concurrent = max_concurrent or self.runner.slots()
        self.only_jobs = only_jobs  # None: the whole queue (``submit --wait`` narrows it)
        self.only_sweeps = only_sweeps  # with only_jobs: these sweeps' new trials run too
        self.poll_seconds = poll_seconds
        self.hung_seconds, self.cancel_grace, self.kill_grace = hung_seconds, cancel_grace, kill_grace
        self.host = host_name()
        self.token = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.handles: dict[int, Handle] = {}
        self._kill_reasons: dict[int, str] = {}
        self._terminated_at: dict[int, float] = {}  # job -> when its worker got SIGTERM (monotonic)
        self._killed: set[int] = set()  # jobs whose worker got SIGKILL after SIGTERM
        self._hung: dict[int, str] = {}  # jobs whose worker was killed for missing heartbeats
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by stop() and by wake_local_supervisors()
        self._kill_on_stop = False
        self._thread: threading.Thread | None = None
        self._last_housekeeping = 0.0
        # Since when every database write worked: a worker's heartbeat is judged only after
        # the database has been writable for hung_seconds (it may have been locked for it too).
        self._writable_since = time.monotonic()

    # ------------------------------------------------------------ lifecycle

    def start(self) -> Supervisor:
        """Run in a daemon thread (inside the web app); returns self."""
        self._thread = threading.Thread(target=self.run_forever, name="supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, kill_workers: bool = False, timeout: float = 10.0) -> None:
        """Stop claiming. Workers keep running (the next supervisor adopts them) unless
        ``kill_workers``, which kills them and records their jobs as failed."""
        self._kill_on_stop = kill_workers
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run_forever(self) -> None:
        """Reconcile, then poll until :meth:`stop` (or Ctrl-C in the foreground)."""
        enter_process(self.token, self._wake)
        try:
            while not self._stop.is_set() and not self._guarded("registering", self._register):
                self._wake.wait(self.poll_seconds)
            self._guarded("reconciling at start", lambda: self.reconcile(at_start=True))
            while not self._stop.is_set():
                self.tick()
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
        finally:
            self._shutdown()

    def tick(self) -> None:
        """One pass: reap, enforce cancels, housekeeping, then start queued jobs.

        Each step is guarded on its own, so a fault in one (e.g. a locked database) is
        logged and retried next poll without skipping the others or ending the loop.
        """
        self._guarded("reaping workers", self._reap)
        self._guarded("enforcing cancels", self._enforce_cancels)
        due = time.monotonic() - self._last_housekeeping >= HOUSEKEEPING_SECONDS
        if due and self._guarded("housekeeping", self._housekeeping):
            self._last_housekeeping = time.monotonic()
        self._guarded("advancing sweeps", self._advance_sweeps)
        self._guarded("starting queued jobs", self._fill_slots)

    def _guarded(self, what: str, step: Callable[[], object]) -> bool:
        """Run one step; True if it worked. No exception leaves the supervisor's loop."""
        try:
            step()
            return True
        except Exception as exc:  # logged; the next poll tries again
            if is_transient(exc):
                self._writable_since = time.monotonic()
                log.warning("supervisor: %s failed (%s); retrying next poll", what, exc)
            else:
                log.exception("supervisor: %s failed; retrying next poll", what)
            return False

    def _housekeeping(self) -> None:
        supervisor_heartbeat(self.db, self.token)
        self.reconcile(at_start=False)

    def _register(self) -> None:
        me = psutil.Process()
        register_supervisor(
            self.db,
            SupervisorRow(
                token=self.token,
                host=self.host,
                pid=me.pid,
                process_started=me.create_time(),
                max_concurrent=self.max_concurrent,
                started_at=utcnow(),
                heartbeat_at=utcnow(),
            ),
        )
        log.info("supervisor %s: up to %d job(s) at once", self.token, self.max_concurrent)

    def _shutdown(self) -> None:
        leave_process(self.token, self._wake)
        if self._kill_on_stop:
            for job_id, handle in self.handles.items():
                self._kill_reasons[job_id] = "killed because the supervisor stopped"
                self.runner.kill(handle)
            deadline = time.monotonic() + 5.0
            while self.handles and time.monotonic() < deadline:
                self._guarded("reaping workers", self._reap)
                time.sleep(0.1)
        try:
            retry(lambda: remove_supervisor(self.db, self.token), what="removing the supervisor row")
        except Exception:  # the row goes stale and is ignored anyway
            log.exception("could not remove supervisor row")
        self.db.dispose()

    # ------------------------------------------------------------ the loop

    def _fill_slots(self) -> None:
        while len(self.handles) < self.max_concurrent and not self._stop.is_set():
            # The limit is checked again in the database, against every supervisor's jobs on
            # this host; a cluster's jobs run elsewhere, and the cluster queues what does not fit.
            limit = None if self.runner.cluster_wide else self.max_concurrent
            job_id = queue.claim_next(
                self.db, self.token, self.host, self.only_jobs, limit=limit, gpus=self.gpus
            )
            if job_id is None:
                return
            self._launch(job_id)

    def _advance_sweeps(self) -> None:
        """Searches ask for their next trials as slots free up (``jobs.sweeps.advance``)."""
        from jobs import sweeps

        if self.only_jobs is not None and not self.only_sweeps:
            return
        room = self.max_concurrent - len(self.handles)
        queued = sweeps.advance(self.db, self.settings.artifacts_dir, room, self.only_sweeps)
        if self.only_jobs is not None:
            self.only_jobs.update(queued)

    def _launch(self, job_id: int) -> None:
        job = retry(lambda: self._read_job(job_id), what=f"job {job_id}: reading it to start")
        assert job is not None  # we just claimed it
        log_path = Path(job.log_path or self.settings.artifacts_dir / f"job-{job_id}" / "job.log")
        try:
            handle = self.runner.start(job_id, log_path=log_path, gpu=job.gpu)
        except OSError as exc:
            queue.finish(
                self.db, job_id, FAILED, error=f"could not start the worker: {exc}", error_kind="internal"
            )
            return
        self.handles[job_id] = handle
        where = handle.ref or f"pid {handle.pid}"
        gpu = f" on GPU {job.gpu}" if job.gpu is not None else ""
        log.info("job %d: started worker %s%s", job_id, where, gpu)
        # The worker records its pid itself too, so a failure here only delays it. A cluster
        # job has no pid or node until its worker starts there and records them.
        worker = (
            {}
            if handle.ref is not None
            else {"worker_pid": handle.pid, "worker_host": handle.host, "worker_started": handle.started}
        )
        queue.update_running(self.db, job_id, heartbeat_at=utcnow(), **worker)

    def _read_job(self, job_id: int) -> Job | None:
        with self.db.read() as session:
            return session.get(Job, job_id)

    def _reap(self) -> None:
        for job_id, handle in list(self.handles.items()):
            code = self.runner.poll(handle)
            if code is None:
                continue
            reason = self._kill_reasons.get(job_id) or handle.reason or self._exit_reason(code)
            hung = self._hung.get(job_id)
            failure = f"{hung}; it was killed" if hung else None
            # Forgotten only once its end is recorded: if this raises, the next poll retries.
            message = end_stopped_worker(self.db, job_id, reason, failure=failure)
            self.runner.release(handle)
            del self.handles[job_id]
            self._kill_reasons.pop(job_id, None)
            self._terminated_at.pop(job_id, None)
            self._killed.discard(job_id)
            self._hung.pop(job_id, None)
            if message is not None:  # the worker died before recording an outcome
                log.warning("job %d: %s", job_id, message)

    @staticmethod
    def _exit_reason(code: int) -> str:
        reason = describe_exit(code)
        if code == -signal.SIGKILL:
            reason += (
                "; if nobody killed it, the system probably ran out of memory: try a "
                "smaller batch size or max length"
            )
        return reason

    def _enforce_cancels(self) -> None:
        """SIGTERM a worker that ignores a cancel request; SIGKILL it if SIGTERM does not help."""
        requests = queue.cancel_requests(self.db, list(self.handles))
        # A cluster job is stopped through the cluster at once (Ray's stop_job: SIGTERM, which
        # the worker turns into a recorded cancel); a local worker first gets time to stop itself.
        grace = 0.0 if self.runner.cluster_wide else self.cancel_grace
        for job_id, asked_at in requests.items():
            handle = self.handles.get(job_id)
            if handle is None or (grace and fresh(asked_at, grace)):
                continue
            terminated_at = self._terminated_at.get(job_id)
            if terminated_at is None:
                self._terminated_at[job_id] = time.monotonic()
                self._kill_reasons[job_id] = (
                    f"cancelled: its cluster job {handle.ref} was stopped"
                    if handle.ref
                    else f"the worker did not stop within {grace:.0f} s of the cancel request "
                    "and was told to stop (SIGTERM)"
                )
                self.runner.terminate(handle)
            elif time.monotonic() - terminated_at >= self.kill_grace and job_id not in self._killed:
                self._killed.add(job_id)
                self._kill_reasons[job_id] = (
                    f"the worker did not stop within {self.cancel_grace + self.kill_grace:.0f} s of the "
                    "cancel request and was killed"
                )
                self.runner.kill(handle)
