"""Jobs on a Ray cluster, through the Ray Jobs API (``--runner ray --ray-address URL``).

The supervisor still claims each job from the database; this runner then submits the
same ``python -m jobs.worker ID`` command as a Ray job, and the worker, wherever Ray
places it, writes progress and metrics to the shared database as it does locally.
Ray does the placement: a job asks for one GPU (GPU jobs, where the cluster has GPUs)
or ``ray_cpus_per_job`` CPUs, and waits in Ray's queue until a node has them.

Never twice: the submission id is derived from the job's row (its id and creation
time, so two databases sharing one cluster cannot collide), and ``start`` first asks
Ray whether that submission exists; a restarted supervisor finds its jobs the same way.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL, make_url

from backend.errors import ConfigError
from backend.settings import PROJECT_ROOT, Settings
from jobs.runner import CLUSTER_JOB_ENV, Handle, worker_environment
from jobs.schema import Job

log = logging.getLogger("jobs.ray_runner")

# Ray's words for a job's state (ray.job_submission.JobStatus values).
PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED = "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"
EXIT_CODES = {SUCCEEDED: 0, FAILED: 1, STOPPED: -15}  # as Runner.poll reports an ending
# What the worker needs from this process's environment; nothing else travels (Ray shows a
# job's runtime_env to anyone who can open its dashboard: no tokens, no passwords).
FORWARDED = ("PYTHONUNBUFFERED", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
FORWARDED_PREFIX = "WORKBENCH_"
SECRET_KEYS = ("WORKBENCH_AUTH",)
# The code travels as Ray's working_dir, less what is not code (Ray caches it by content).
UPLOAD_EXCLUDES = [".git", ".venv", "runs", "models_cache", "bench/*.jsonl", "**/__pycache__", "*.db"]
LIST_CACHE_SECONDS = 2.0
# What a worker imports first: a node whose Python lacks them would fail every job after it
# starts (Ray runs the entrypoint with the Python that ran `ray start`).
PROBE_MODULES = ("sqlalchemy", "torch", "transformers", "peft", "jobs.worker")
PROBE_SECONDS = 180.0  # the first probe uploads the code and imports torch on the node
RAY_LOG_LINES = 200  # of Ray's own log of a job, kept in the job's log when it ends
DELETE_AFTER_SECONDS = 5.0  # after a job's end, before its Ray record is deleted (see release)
DELETE_TRIES = 3
_checked: set[str] = set()  # clusters (and module lists) whose Python this process has probed


def submission_id(job: Job) -> str:
    """``workbench-<job id>-<creation time>``: the same on every machine that reads the row."""
    return f"workbench-{job.id}-{job.created_at:%Y%m%d%H%M%S%f}"


def safe_db_url(url: str) -> str:
    """The database URL without its password: a node reads that from its own PGPASSWORD or
    ~/.pgpass (libpq), so the secret never enters Ray's job records."""
    u = make_url(url)  # URL.set(password=None) would keep it: None there means "unchanged"
    bare = URL.create(u.drivername, u.username, None, u.host, u.port, u.database, u.query)
    return bare.render_as_string(hide_password=False)


def cluster_environment(settings: Settings) -> dict[str, str]:
    """The worker's environment variables as they travel to a Ray node: no secrets."""
    env = worker_environment(settings, None)
    kept = {
        key: value
        for key, value in env.items()
        if (key.startswith(FORWARDED_PREFIX) or key in FORWARDED) and key not in SECRET_KEYS
    }
    kept["WORKBENCH_DB_URL"] = safe_db_url(settings.db_url)
    return kept


class RayRunner:
    """Submits, polls and stops one Ray job per workbench job."""

    cluster_wide = True

    def __init__(self, settings: Settings) -> None:
        from ray.job_submission import JobSubmissionClient  # ray loads only where it is used

        self.settings = settings
        try:
            self.client = JobSubmissionClient(settings.ray_address)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = settings.ray_address or "RAY_ADDRESS / a local cluster"
            raise ConfigError(f"cannot reach the Ray cluster at {where}: {exc}") from exc
        self._jobs: dict[str, Any] = {}
        self._listed_at = 0.0
        self._resources: dict[str, float] | None = None

    # ------------------------------------------------------------ the cluster

    def resources(self) -> dict[str, float]:
        """The cluster's total resources (CPU, GPU, ...) over its live nodes, read once."""
        if self._resources is None:
            from ray.util.state import list_nodes

            totals: dict[str, float] = {}
            try:
                # The client's resolved dashboard URL ("auto" and ray:// already turned into http).
                # Dead nodes are dropped here: Ray's own state filter refuses when some are listed.
                listed = list_nodes(address=self.client._address, limit=10_000)
                nodes = [n for n in listed if n.state == "ALIVE"]
            except Exception as exc:  # noqa: BLE001 - the job API alone still works
                log.warning("could not read the Ray cluster's resources (%s); assuming 1 CPU", exc)
                nodes = []
            for node in nodes:
                for key, value in (node.resources_total or {}).items():
                    totals[key] = totals.get(key, 0.0) + float(value)
            self._resources = totals or {"CPU": 1.0}
        return self._resources

    def slots(self) -> int:
        """How many jobs the supervisor keeps submitted at once: what the cluster can run."""
        res = self.resources()
        by_cpu = int(res.get("CPU", 1.0) // max(self.settings.ray_cpus_per_job, 0.01))
        return max(1, by_cpu + int(res.get("GPU", 0.0)))

    def _wants_gpu(self, job_config: dict[str, Any] | None) -> bool:
        device = (job_config or {}).get("device", "auto")
        return device == "cuda" or (device == "auto" and self.resources().get("GPU", 0.0) >= 1)

    # ------------------------------------------------------------ the Runner protocol

    def start(self, job_id: int, *, log_path: Path, gpu: int | None = None) -> Handle:
        job = self._job(job_id)
        ref = submission_id(job)
        if self._info(ref, fresh=True) is None:  # a submission of this job would be adopted
            resources: dict[str, float] = (
                {"entrypoint_num_gpus": 1}
                if self._wants_gpu(job.config)
                else {"entrypoint_num_cpus": self.settings.ray_cpus_per_job}
            )
            try:
                self.client.submit_job(
                    entrypoint=f"python -m jobs.worker {job_id}",
                    submission_id=ref,
                    runtime_env={
                        "working_dir": str(PROJECT_ROOT),
                        "excludes": UPLOAD_EXCLUDES,
                        "env_vars": {**cluster_environment(self.settings), CLUSTER_JOB_ENV: ref},
                    },
                    metadata={"workbench_job": str(job_id), "name": (job.name or "")[:200]},
                    **resources,
                )
            except RuntimeError as exc:
                if "already exists" not in str(exc):  # another supervisor's submit won: adopt
                    raise OSError(f"Ray refused the job: {exc}") from exc
        return Handle(job_id, 0, 0.0, "ray", ref=ref, waiting=True)

    def attach(self, job: Job) -> Handle | None:
        ref = submission_id(job)
        if self._info(ref) is None:
            return None  # Ray never heard of it (or forgot it): the job is failed as vanished
        return Handle(job.id, 0, 0.0, "ray", ref=ref)

    def poll(self, handle: Handle) -> int | None:
        ref = handle.ref or ""
        # One list_jobs call answers every handle's poll; one not listed yet is asked alone.
        info = self._info(ref) or self._info(ref, fresh=True)
        if info is None:
            handle.reason = "its Ray job vanished from the cluster (the head node restarted?)"
            return 1
        status = str(getattr(info.status, "value", info.status))
        handle.waiting = status == PENDING
        if status not in EXIT_CODES:
            return None
        if status != SUCCEEDED:
            handle.reason = ray_reason(status, info.message, handle.ref or "")
        return EXIT_CODES[status]

    def terminate(self, handle: Handle) -> None:
        self._stop(handle)

    def kill(self, handle: Handle) -> None:
        self._stop(handle)  # Ray's stop_job sends SIGTERM, then SIGKILL after its own grace

    def release(self, handle: Handle) -> None:
        """Once the job's end is recorded: keep Ray's log of it and its final status in the
        job's own log, then delete Ray's record, so that ``list_jobs`` (read on every poll)
        holds the jobs in flight rather than every job ever submitted."""
        ref = handle.ref or ""
        try:
            job = self._job(handle.job_id)
            info = self._info(ref, fresh=True)
            status = str(getattr(info.status, "value", info.status)) if info is not None else "unknown"
            tail = self.logs(job, RAY_LOG_LINES)
            if job.log_path:
                with Path(job.log_path).open("a", encoding="utf-8") as out:
                    out.write(
                        f"── its Ray job {ref} ended {status}; the job's output as its Ray node saw it:\n"
                    )
                    out.writelines(line + "\n" for line in tail)
        except Exception as exc:  # noqa: BLE001 - housekeeping: the job is recorded either way
            log.warning("job %d: could not keep its Ray log (%s): %s", handle.job_id, ref, exc)
        self._delete_later(ref)

    def _delete_later(self, ref: str) -> None:
        """Delete Ray's record of an ended submission, in the background and a little later:
        deleted the moment Ray reports the end, a record came back as FAILED ("Job supervisor
        actor died") once Ray's job supervisor actor exited."""
        timer = threading.Timer(DELETE_AFTER_SECONDS, self._delete, args=(ref,))
        timer.daemon = True
        timer.start()

    def _delete(self, ref: str) -> None:
        """Delete ``ref``'s record; again if Ray still (or again) has it a moment later."""
        for _ in range(DELETE_TRIES):
            with contextlib.suppress(Exception):  # not deletable yet, or already gone
                self.client.delete_job(ref)
            time.sleep(DELETE_AFTER_SECONDS / 2)
            try:
                self.client.get_job_info(ref)
            except Exception:  # noqa: BLE001 - "does not exist": done
                return
        log.info("Ray kept its record of %s after %d deletions", ref, DELETE_TRIES)

    def check_environment(self, modules: tuple[str, ...] = PROBE_MODULES) -> None:
        """Run one tiny Ray job that imports what a worker needs, with the jobs' own code and
        environment; a ConfigError with the advice if it cannot. Once per cluster and process."""
        address = f"{self.client._address} {modules}"
        if address in _checked:
            return
        ref = f"workbench-probe-{int(time.time() * 1000)}"
        self.client.submit_job(
            entrypoint="python -c " + repr("import " + ", ".join(modules)),
            submission_id=ref,
            runtime_env={
                "working_dir": str(PROJECT_ROOT),
                "excludes": UPLOAD_EXCLUDES,
                "env_vars": cluster_environment(self.settings),
            },
        )
        status, message = self._wait(ref, PROBE_SECONDS)
        output = self.client.get_job_logs(ref) if status != PENDING else ""
        if status not in EXIT_CODES:
            with contextlib.suppress(Exception):  # tidying up: the verdict stands either way
                self.client.stop_job(ref)
        self._delete_later(ref)
        if status == SUCCEEDED:
            _checked.add(address)
            return
        raise ConfigError(probe_failure(status, message, output))

    def _wait(self, ref: str, timeout: float) -> tuple[str, str]:
        """Poll submission ``ref`` until it ends or ``timeout`` passes: (status, Ray's message)."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.client.get_job_info(ref)
            status = str(getattr(info.status, "value", info.status))
            if status in EXIT_CODES or time.monotonic() > deadline:
                return status, info.message or ""
            time.sleep(0.5)

    def logs(self, job: Job, lines: int) -> list[str]:
        """The last ``lines`` lines Ray keeps of the job's output ([] if it has none)."""
        try:
            text = self.client.get_job_logs(submission_id(job))
        except (RuntimeError, ConnectionError):
            return []
        return text.splitlines()[-lines:] if lines > 0 else []

    # ------------------------------------------------------------ helpers

    def _stop(self, handle: Handle) -> None:
        try:
            self.client.stop_job(handle.ref or "")
        except RuntimeError as exc:  # already ended or gone: the next poll reports it
            log.info("job %d: stop_job: %s", handle.job_id, exc)

    def _job(self, job_id: int) -> Job:
        from jobs.db import Database

        with Database(self.settings.db_url).read() as session:
            job = session.get(Job, job_id)
        if job is None:
            raise OSError(f"job {job_id} is not in the database")
        return job

    def _info(self, ref: str, *, fresh: bool = False) -> Any | None:
        """Ray's record of submission ``ref``, from one ``list_jobs`` call shared by every job
        polled within LIST_CACHE_SECONDS (``fresh``: asked alone, now)."""
        if fresh:
            try:
                return self.client.get_job_info(ref)
            except RuntimeError as exc:
                if "does not exist" in str(exc) or "404" in str(exc):
                    return None
                raise
        if time.monotonic() - self._listed_at > LIST_CACHE_SECONDS:
            self._jobs = {j.submission_id: j for j in self.client.list_jobs() if j.submission_id}
            self._listed_at = time.monotonic()
        return self._jobs.get(ref)


def probe_failure(status: str, message: str, output: str) -> str:
    """Why the cluster cannot run workbench jobs, and what to do, in one message."""
    missing = re.search(r"ModuleNotFoundError: No module named '([^']+)'", output)
    if missing:
        return (
            f"the Ray cluster's Python cannot import {missing.group(1)!r}, so every job would fail "
            "as it starts: start Ray from the project's environment on every node "
            "(`make install`, then `.venv/bin/ray start --head` on the head and "
            "`.venv/bin/ray start --address HEAD:6379` on the others; docs/jobs.md)"
        )
    if status not in EXIT_CODES:
        return (
            f"a test job on the Ray cluster did not finish within {PROBE_SECONDS:.0f} s ({status}): "
            "check that the cluster has a live node with a free CPU"
        )
    last = " ".join(output.strip().splitlines()[-3:])[-500:]
    return f"a test job on the Ray cluster failed ({status}: {message or last}): check the nodes' environment"


def ray_reason(status: str, message: str | None, ref: str) -> str:
    """How a Ray job ended, in words for the job's error (Ray's own message included)."""
    said = re.sub(r"\s+", " ", message or "").strip()
    if status == STOPPED:
        return f"its Ray job {ref} was stopped" + (f": {said}" if said else "")
    return f"its Ray job {ref} failed" + (f": {said}" if said else "")
