"""Reconciling running jobs that no live supervisor looks after, and hung workers.

At a supervisor's start, and every few seconds after, it looks at every running job: a
live worker it can reach (on this host; on any node for a cluster runner such as Ray)
that nobody looks after is adopted, a dead one's job is ended;
a job on another host that has stopped heartbeating for ``STALE_SECONDS`` is ended; and
a worker on this host that stopped heartbeating for ``hung_seconds`` (stopped,
deadlocked) is killed and its job failed, judged only while the database has been
writable long enough for the worker to have written its heartbeat.

A mixin of ``jobs.supervisor.Supervisor``, kept apart from its claim/reap loop because it
is the crash-recovery half: it deals with workers some other (possibly dead) supervisor
started.
"""

from __future__ import annotations

import logging
import time

from jobs.db import Database
from jobs.queue import running_jobs, take_over, update_running
from jobs.runner import Handle, Runner
from jobs.schema import Job, SupervisorRow, utcnow
from jobs.stopped_worker import end_stopped_worker
from jobs.supervisor_registry import STALE_SECONDS, fresh, owner_alive, remove_supervisor, supervisors

log = logging.getLogger("jobs.supervisor")


class Reconciler:
    """Adopts or ends orphaned running jobs; the state it reads is the supervisor's."""

    db: Database
    host: str
    token: str
    runner: Runner
    handles: dict[int, Handle]
    hung_seconds: float
    _kill_reasons: dict[int, str]
    _hung: dict[int, str]
    _writable_since: float

    def reconcile(self, *, at_start: bool) -> None:
        """Adopt or end running jobs that no live supervisor looks after; end hung ones here."""
        # Jobs first, owners second: a supervisor registers before it claims, so the owner
        # of every job read here is in the owners read after. The other order misses one
        # that registered and claimed in between, and ends its job as an orphan.
        jobs = running_jobs(self.db)
        owners = supervisors(self.db)
        judge_hung = time.monotonic() - self._writable_since >= self.hung_seconds
        for job in jobs:
            ours = job.id in self.handles
            looked_after = ours or owner_alive(owners.get(job.claimed_by or ""), self.host)
            # A cluster runner reaches a worker on any node; the local one only this host's.
            if not (self.runner.cluster_wide or job.worker_host == self.host):
                if not looked_after and not fresh(job.heartbeat_at, STALE_SECONDS):
                    self._end_orphan(
                        job, f"no heartbeat from {job.worker_host} for over {STALE_SECONDS:.0f} s"
                    )
            elif not looked_after:
                self._adopt_or_end(job, at_start)
            elif ours and self.handles[job.id].waiting:
                # Queued in the cluster, no worker yet: the supervisor beats for it, so that
                # the worker's first heartbeat is not judged late once it starts.
                update_running(self.db, job.id, heartbeat_at=utcnow())
            elif (ours or job.worker_host == self.host) and judge_hung and self._silent(job):
                self._end_hung(job)
        self._prune_supervisors(owners)

    def _silent(self, job: Job) -> bool:
        return not fresh(job.heartbeat_at, self.hung_seconds)

    def _adopt_or_end(self, job: Job, at_start: bool) -> None:
        handle = self.runner.attach(job)
        if handle is None and job.worker_host != self.host and fresh(job.heartbeat_at, STALE_SECONDS):
            return  # alive elsewhere, started by a runner this one cannot reach: judged once stale
        if handle is not None:
            if take_over(self.db, job.id, job.claimed_by, self.token):
                self.handles[job.id] = handle
                log.info("job %d: adopted its live worker %s", job.id, handle.ref or f"pid {handle.pid}")
            return
        when = "at supervisor start" if at_start else "after its supervisor stopped"
        self._end_orphan(job, f"found dead {when}")

    def _end_hung(self, job: Job) -> None:
        """A worker on this host (ours or a live peer's) stopped heartbeating: kill it, fail the job."""
        silent = (utcnow() - job.heartbeat_at).total_seconds() if job.heartbeat_at else self.hung_seconds
        reason = f"worker hung: no heartbeat for {silent:.0f} s"
        handle = self.handles.get(job.id) or self.runner.attach(job)
        if handle is not None:
            if job.id in self.handles:  # killed first: should the write below fail, the reaper
                self._kill_reasons[job.id] = self._hung[job.id] = reason  # records the same reason
            self.runner.kill(handle)
        message = end_stopped_worker(self.db, job.id, reason, failure=f"{reason}; it was killed")
        if message is not None:
            log.warning("job %d: %s", job.id, message)

    def _end_orphan(self, job: Job, reason: str) -> None:
        message = end_stopped_worker(self.db, job.id, reason)
        if message is not None:
            log.warning("job %d: %s", job.id, message)

    def _prune_supervisors(self, owners: dict[str, SupervisorRow]) -> None:
        for token, row in owners.items():
            gone = row.host == self.host or not fresh(row.heartbeat_at, 3600)
            if token != self.token and gone and not owner_alive(row, self.host):
                remove_supervisor(self.db, token)
