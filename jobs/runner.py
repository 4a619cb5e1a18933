"""Where a job runs, behind one small interface: a local OS process per job, or a Ray job.

:class:`LocalProcessRunner` (the default) starts ``python -m jobs.worker ID`` on this
machine; ``jobs.ray_runner.RayRunner`` submits the same command to a Ray cluster. The
supervisor only ever starts, polls, attaches and stops handles (``make_runner`` picks one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psutil

from backend.settings import PROJECT_ROOT, Settings, host_name
from jobs.forkserver import forked_here, known_exit, shared_server
from jobs.schema import Job

log = logging.getLogger("jobs.runner")

WORKER_NICENESS = 10  # training yields the CPU to the web app and the supervisor
EXIT_UNKNOWN = -1000  # poll() of a re-attached process: gone, but not our child to reap
# A worker whose training finished but whose final database write kept failing: it leaves
# its checkpoint (and its outcome file) so that the job is recorded or resumed later.
EXIT_NOT_RECORDED = 3
CLUSTER_JOB_ENV = "WORKBENCH_CLUSTER_JOB"  # set for a worker a cluster runs: its submission id


@dataclass
class Handle:
    """A started worker. ``process`` is None for one re-attached after a restart.

    A cluster job has no pid here (0): ``ref`` names it to the cluster, ``waiting`` says it
    still waits for resources there, and ``reason`` is the cluster's word on how it ended.
    """

    job_id: int
    pid: int
    started: float  # the process's start time (psutil), guards against PID reuse
    host: str
    gpu: int | None = None
    process: subprocess.Popen[bytes] | None = None
    ref: str | None = None
    waiting: bool = False
    reason: str | None = None


class Runner(Protocol):
    """Starts, watches and stops the process that runs one job."""

    # True when this runner reaches workers on every host (a cluster), not only this one:
    # its supervisor may then adopt and judge any job, wherever its worker runs.
    cluster_wide: bool

    def start(self, job_id: int, *, log_path: Path, gpu: int | None = None) -> Handle:
        """Launch the worker for ``job_id`` (already claimed), output appended to ``log_path``."""
        ...

    def attach(self, job: Job) -> Handle | None:
        """Re-attach to ``job``'s worker launched earlier (e.g. before a restart); None if gone."""
        ...

    def slots(self) -> int:
        """How many jobs to run at once by default (this machine's, or the cluster's)."""
        ...

    def poll(self, handle: Handle) -> int | None:
        """None while running; else the exit code (negative: killed by that signal)."""
        ...

    def terminate(self, handle: Handle) -> None:
        """Ask the worker to stop (SIGTERM): it records its job as cancelled and exits."""
        ...

    def kill(self, handle: Handle) -> None:
        """Stop the worker now (SIGKILL); the next poll reports it."""
        ...

    def release(self, handle: Handle) -> None:
        """Let go of what the runner keeps of a job whose end is now recorded (never raises)."""
        ...


def process_alive(pid: int, started: float | None) -> bool:
    """True if ``pid`` runs and is the same process that started at ``started``."""
    try:
        proc = psutil.Process(pid)
        if started is not None and abs(proc.create_time() - started) > 0.5:
            return False  # the PID was reused by another process
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def process_start_time(pid: int) -> float:
    """When ``pid`` started, as psutil reports it (seconds since the epoch)."""
    return psutil.Process(pid).create_time()


def describe_exit(code: int) -> str:
    """Human words for an exit code as ``poll`` returns it."""
    if code == EXIT_UNKNOWN:
        return "exit status unknown"
    if code == EXIT_NOT_RECORDED:
        return (
            f"exit code {code}: training finished but the database kept refusing the result; "
            "the checkpoint is kept, so the job can be resumed"
        )
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-code} {name}"
    return f"exit code {code}"


# The web app's login (ui.server): a worker never needs it, and its environment is readable
# by anything the training code runs (a model's remote code, a data loader).
WORKER_ENV_DROPPED = ("WORKBENCH_AUTH",)


def worker_environment(settings: Settings, gpu: int | None) -> dict[str, str]:
    """The worker's environment: this one, less the app's password, plus where the data and
    database are and which experiment trackers are on."""
    env = {k: v for k, v in os.environ.items() if k not in WORKER_ENV_DROPPED}
    env.update(
        WORKBENCH_DATA_DIR=str(settings.data_dir),
        WORKBENCH_DB_URL=settings.db_url,
        WORKBENCH_MODELS_CACHE=str(settings.models_cache),
        PYTHONUNBUFFERED="1",
        **settings.tracker_environment(),  # flags of this process reach the worker's Settings.from_env
    )
    if gpu is not None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = [v for v in visible.split(",") if v.strip()] if visible else None
        env["CUDA_VISIBLE_DEVICES"] = ids[gpu] if ids and gpu < len(ids) else str(gpu)
    return env


class LocalProcessRunner:
    """One ``python -m jobs.worker ID`` process per job, in its own session, at low priority."""

    cluster_wide = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.host = host_name()

    def start(self, job_id: int, *, log_path: Path, gpu: int | None = None) -> Handle:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = worker_environment(self.settings, gpu)
        # On a CPU machine the worker is a fork of a process that imported the training stack
        # once (jobs.forkserver): 4-5 s of imports less per job. A machine with GPUs starts it
        # as a process: nothing that touched CUDA may fork.
        server = shared_server(env) if gpu_count() == 0 else None
        if server is not None:
            try:
                pid = server.start(job_id, env, log_path, WORKER_NICENESS)
            except OSError as exc:
                log.warning("job %d: %s; starting the worker as a process", job_id, exc)
            else:
                with contextlib.suppress(psutil.NoSuchProcess):
                    return Handle(job_id, pid, process_start_time(pid), self.host, gpu)
                return Handle(job_id, pid, 0.0, self.host, gpu)  # gone already: poll has its code
        with log_path.open("ab") as log_file:
            # Own session: Ctrl-C in the app's terminal does not kill training, and
            # kill() can take the worker's whole process group. No preexec_fn: it is
            # unsafe in a threaded program like the web app; niceness is set below.
            process = subprocess.Popen(
                [sys.executable, "-m", "jobs.worker", str(job_id)],
                cwd=PROJECT_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started = 0.0
        try:
            proc = psutil.Process(process.pid)
            started = proc.create_time()
            proc.nice(WORKER_NICENESS)  # milliseconds after exec, long before training starts
        except psutil.NoSuchProcess:
            pass  # already gone: the next poll reports its exit code
        return Handle(job_id, process.pid, started, self.host, gpu, process)

    def slots(self) -> int:
        return default_concurrency(gpu_count())

    def attach(self, job: Job) -> Handle | None:
        if job.worker_pid is None or job.worker_host != self.host:
            return None
        started = job.worker_started or 0.0
        if not process_alive(job.worker_pid, started):
            return None
        return Handle(job.id, job.worker_pid, started, self.host)

    def poll(self, handle: Handle) -> int | None:
        if handle.process is not None:
            return handle.process.poll()
        code = known_exit(handle.pid)  # a fork server's worker: its exit code, once reaped
        if code is not None:
            return code
        if forked_here(handle.pid):
            return None  # running, or ended a moment ago and about to be reported
        return None if process_alive(handle.pid, handle.started) else EXIT_UNKNOWN

    def terminate(self, handle: Handle) -> None:
        self._signal(handle, signal.SIGTERM)

    def kill(self, handle: Handle) -> None:
        self._signal(handle, signal.SIGKILL)

    def release(self, handle: Handle) -> None:
        """Nothing to let go of: the reaped process is gone."""

    def _signal(self, handle: Handle, signum: int) -> None:
        if handle.process is not None and handle.process.poll() is not None:
            return
        if handle.process is None and not process_alive(handle.pid, handle.started):
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(handle.pid, signum)  # its session's group: the worker's own pid


def make_runner(settings: Settings) -> Runner:
    """The runner ``settings.runner`` names ("local" or "ray")."""
    if settings.runner == "ray":
        from jobs.ray_runner import RayRunner  # ray is imported only by whoever uses it

        runner = RayRunner(settings)
        runner.check_environment()  # refuse now, not with every job after it starts
        return runner
    return LocalProcessRunner(settings)


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
