"""Workers forked from the fork server are what started workers were: their own session, low
priority, the job's log, no app password, an exit code when they end; switched off, the
runner starts a process per job as before."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from jobs.forkserver import ENV_SWITCH, ForkServer
from jobs.runner import WORKER_NICENESS, worker_environment
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import make_settings, paced_job, quick_job, wait_running_step, wait_status


@pytest.mark.engines("sqlite")  # how workers start, not the engine
def test_a_forked_worker_runs_in_its_own_session_at_low_priority_and_reports_how_it_ended(
    bench: Workbench, supervisors: Callable[..., Supervisor], data_dir: Path
) -> None:
    job_id = bench.submit(paced_job(data_dir, epochs=20))
    supervisors()
    job = wait_running_step(bench, job_id)
    pid = job["worker_pid"]
    worker = psutil.Process(pid)
    assert os.getsid(pid) == pid == os.getpgid(pid)  # killpg reaches it, and only it
    assert worker.nice() == WORKER_NICENESS
    assert worker.parent() is not None and worker.parent().pid != os.getpid()  # the fork server's child
    assert Path(job["log_path"]).read_text().count("worker started") == 1  # stdout and stderr: the log
    os.killpg(pid, signal.SIGKILL)
    failed = wait_status(bench, job_id, timeout=60)
    assert failed["status"] == "failed" and "killed by signal 9" in failed["error"], failed["error"]


def test_the_fork_server_never_holds_the_app_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its environment is a worker's (the password dropped), and a forked worker's initial
    environment is the server's: no code a job runs can read the password from /proc."""
    monkeypatch.setenv("WORKBENCH_AUTH", "ann:s3cret")
    server = ForkServer(worker_environment(make_settings(tmp_path), None))
    try:
        assert server.ready.wait(120), "the fork server did not start"
        environ = psutil.Process(server.process.pid).environ()
        assert "WORKBENCH_AUTH" not in environ and "s3cret" not in repr(environ)
    finally:
        server.stop()
        server.process.wait(timeout=30)


@pytest.mark.engines("sqlite")  # how workers start, not the engine
def test_switched_off_each_worker_is_a_process_of_its_own(
    bench: Workbench,
    supervisors: Callable[..., Supervisor],
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(ENV_SWITCH, "0")
    sup = supervisors()
    job_id = bench.submit(paced_job(data_dir, epochs=20))
    pid = wait_running_step(bench, job_id)["worker_pid"]
    assert sup.handles[job_id].process is not None  # started with subprocess, as before
    assert psutil.Process(pid).parent().pid == os.getpid()
    bench.cancel(job_id)
    assert wait_status(bench, job_id, timeout=60)["status"] == "cancelled"
    quick = bench.submit(quick_job(data_dir / "tiny.csv"))
    assert wait_status(bench, quick)["status"] == "succeeded"
