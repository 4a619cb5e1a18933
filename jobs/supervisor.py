"""The supervisor: claims queued jobs, starts one worker per job, reaps and reconciles.

Runs inside ``python app.py`` as a daemon thread (``Supervisor(settings).start()``) or
alone in the foreground (``python app.py worker`` -> ``run_forever()``). Any number of
supervisors may share one database: claims are atomic, and each announces itself in
the ``supervisors`` table so that the others can tell a job that is looked after from
an orphan whose supervisor died.

Crash safety, in short: the supervisor reaps its own workers every poll, so a worker
that dies without ending its job (killed, out of memory) is marked failed at once; at
start, and every few seconds after, it looks at running jobs nobody looks after: a
live worker on this host is adopted, a dead one is marked failed, and a job on another
host that has stopped heartbeating is marked failed.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import psutil

from backend.settings import Settings
from jobs import queue
from jobs.db import Database
from jobs.runner import Handle, LocalProcessRunner, Runner, describe_exit, process_alive
from jobs.schema import FAILED, Job, SupervisorRow, utcnow

log = logging.getLogger("jobs.supervisor")

POLL_SECONDS = 0.5
HOUSEKEEPING_SECONDS = 5.0
STALE_SECONDS = 60.0  # no heartbeat for this long: the process or its machine is gone
CANCEL_GRACE_SECONDS = 15.0  # a worker that ignores a cancel request this long is killed
_LIVE_TOKENS: set[str] = set()  # supervisors running in this process
_WAKE_EVENTS: set[threading.Event] = set()  # one per supervisor running in this process


def wake_local_supervisors() -> None:
    """Tell supervisors in this process to look at the queue now (a job was just submitted),
    instead of at their next poll."""
    for event in list(_WAKE_EVENTS):
        event.set()


def gpu_count() -> int:
    """How many CUDA devices this machine has (0 without torch or CUDA)."""
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - a broken CUDA install means: no GPUs
        return 0


def default_concurrency(gpus: int) -> int:
    """One job at a time on a CPU machine (it uses every core), one per GPU otherwise."""
    return max(1, gpus)


def owner_alive(row: SupervisorRow | None, host: str) -> bool:
    """Is the supervisor that claimed a job still running?"""
    if row is None:
        return False
    if row.host != host:
        return queue.fresh(row.heartbeat_at, STALE_SECONDS)
    if row.pid == os.getpid():
        return row.token in _LIVE_TOKENS
    return process_alive(row.pid, row.process_started)


class Supervisor:
    """Runs the queue: at most ``max_concurrent`` jobs at once, each in its own process."""

    def __init__(
        self,
        settings: Settings,
        max_concurrent: int | None = None,
        *,
        runner: Runner | None = None,
        only_jobs: set[int] | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.settings = settings
        self.db = Database(settings.db_url)
        self.gpus = gpu_count()
        self.max_concurrent = max_concurrent or default_concurrency(self.gpus)
        self.runner: Runner = runner or LocalProcessRunner(settings)
        self.only_jobs = only_jobs  # None: the whole queue (``submit --wait`` narrows it)
        self.poll_seconds = poll_seconds
        self.host = socket.gethostname()
        self.token = f"{self.host}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.handles: dict[int, Handle] = {}
        self._kill_reasons: dict[int, str] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by stop() and by wake_local_supervisors()
        self._kill_on_stop = False
        self._thread: threading.Thread | None = None
        self._last_housekeeping = 0.0

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
        self._register()
        try:
            self.reconcile(at_start=True)
            while not self._stop.is_set():
                self.tick()
                self._wake.wait(self.poll_seconds)
                self._wake.clear()
        finally:
            self._shutdown()

    def tick(self) -> None:
        """One pass: reap, enforce cancels, housekeeping, then start queued jobs."""
        try:
            self._reap()
            self._enforce_cancels()
            if time.monotonic() - self._last_housekeeping >= HOUSEKEEPING_SECONDS:
                self._last_housekeeping = time.monotonic()
                queue.supervisor_heartbeat(self.db, self.token)
                self.reconcile(at_start=False)
            self._fill_slots()
        except Exception:  # e.g. a locked database: log and try next poll
            log.exception("supervisor pass failed; retrying")

    def _register(self) -> None:
        _LIVE_TOKENS.add(self.token)
        _WAKE_EVENTS.add(self._wake)
        me = psutil.Process()
        queue.register_supervisor(
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
        _LIVE_TOKENS.discard(self.token)
        _WAKE_EVENTS.discard(self._wake)
        if self._kill_on_stop:
            for job_id, handle in self.handles.items():
                self._kill_reasons[job_id] = "killed because the supervisor stopped"
                self.runner.kill(handle)
            deadline = time.monotonic() + 5.0
            while self.handles and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.1)
        try:
            queue.remove_supervisor(self.db, self.token)
        except Exception:  # the row goes stale and is ignored anyway
            log.exception("could not remove supervisor row")
        self.db.dispose()

    # ------------------------------------------------------------ the loop

    def _fill_slots(self) -> None:
        while len(self.handles) < self.max_concurrent and not self._stop.is_set():
            job_id = queue.claim_next(self.db, self.token, self.host, self.only_jobs)
            if job_id is None:
                return
            self._launch(job_id)

    def _launch(self, job_id: int) -> None:
        with self.db.read() as session:
            job = session.get(Job, job_id)
        assert job is not None  # we just claimed it
        wants_auto = (job.config or {}).get("device", "auto") == "auto"
        gpu = self._free_gpu() if wants_auto else None
        log_path = Path(job.log_path or self.settings.artifacts_dir / f"job-{job_id}" / "job.log")
        try:
            handle = self.runner.start(job_id, log_path=log_path, gpu=gpu)
        except OSError as exc:
            queue.finish(
                self.db, job_id, FAILED, error=f"could not start the worker: {exc}", error_kind="internal"
            )
            return
        self.handles[job_id] = handle
        queue.update_running(
            self.db, job_id, worker_pid=handle.pid, worker_host=handle.host, worker_started=handle.started
        )
        log.info(
            "job %d: started worker pid %d%s", job_id, handle.pid, f" on GPU {gpu}" if gpu is not None else ""
        )

    def _free_gpu(self) -> int | None:
        used = {h.gpu for h in self.handles.values()}
        return next((i for i in range(self.gpus) if i not in used), None)

    def _reap(self) -> None:
        for job_id, handle in list(self.handles.items()):
            code = self.runner.poll(handle)
            if code is None:
                continue
            del self.handles[job_id]
            reason = self._kill_reasons.pop(job_id, None) or self._exit_reason(code)
            message = queue.end_stopped_worker(self.db, job_id, reason)
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
        requests = queue.cancel_requests(self.db, list(self.handles))
        for job_id, asked_at in requests.items():
            if job_id in self._kill_reasons or queue.fresh(asked_at, CANCEL_GRACE_SECONDS):
                continue
            self._kill_reasons[job_id] = (
                f"the worker did not stop within {CANCEL_GRACE_SECONDS:.0f} s of the cancel "
                "request and was killed"
            )
            self.runner.kill(self.handles[job_id])

    # ------------------------------------------------------------ reconcile

    def reconcile(self, *, at_start: bool) -> None:
        """Adopt or end running jobs that no live supervisor looks after."""
        owners = queue.supervisors(self.db)
        for job in queue.running_jobs(self.db):
            if job.id in self.handles or owner_alive(owners.get(job.claimed_by or ""), self.host):
                continue
            if job.worker_host != self.host:
                if not queue.fresh(job.heartbeat_at, STALE_SECONDS):
                    self._end_orphan(
                        job, f"no heartbeat from {job.worker_host} for over {STALE_SECONDS:.0f} s"
                    )
                continue
            handle = None
            if job.worker_pid is not None:
                handle = self.runner.attach(job.id, job.worker_pid, job.worker_started or 0.0)
            if handle is not None:
                if queue.take_over(self.db, job.id, job.claimed_by, self.token):
                    self.handles[job.id] = handle
                    log.info("job %d: adopted live worker pid %d", job.id, handle.pid)
                continue
            when = "at supervisor start" if at_start else "after its supervisor stopped"
            self._end_orphan(job, f"found dead {when}")
        self._prune_supervisors(owners)

    def _end_orphan(self, job: Job, reason: str) -> None:
        message = queue.end_stopped_worker(self.db, job.id, reason)
        if message is not None:
            log.warning("job %d: %s", job.id, message)

    def _prune_supervisors(self, owners: dict[str, SupervisorRow]) -> None:
        for token, row in owners.items():
            gone = row.host == self.host or not queue.fresh(row.heartbeat_at, 3600)
            if token != self.token and gone and not owner_alive(row, self.host):
                queue.remove_supervisor(self.db, token)
