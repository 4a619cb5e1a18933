"""Shared fixtures for the job-queue tests: real SQLite files and a real PostgreSQL server
(every test taking ``settings`` runs on both), real worker processes, the tiny random BERT
(tests/tiny_models.py: the queue's mechanics do not depend on the weights) on tiny generated
data (``tests/conftest.py``'s short reviews, 2 labels, max length 16).

Never a fixed sleep as an assertion: :func:`wait_for` polls with a timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.settings import HOST_ENV, PROJECT_ROOT, Settings
from jobs.runner import process_alive
from jobs.schema import FINISHED
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.conftest import sentiment_rows, write_csv
from tests.pg_server import PostgresServer, running_server, wait_connectable, why_unavailable
from tests.tiny_models import TINY_BERT

JOB_TIMEOUT = 180.0  # generous: the machine may be shared with other training runs


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Input files shared by every test (read-only once written)."""
    folder = tmp_path_factory.mktemp("inputs")
    write_csv(folder / "tiny.csv", sentiment_rows(60))
    write_csv(folder / "medium.csv", sentiment_rows(120, seed=1))
    write_csv(folder / "long.csv", sentiment_rows(600, seed=2))
    return folder


def make_settings(root: Path, db_url: str | None = None) -> Settings:
    """Settings for an isolated data folder under ``root``, with its own SQLite database
    there unless ``db_url`` names another (a PostgreSQL database of the test's own)."""
    data = root / "data"
    return Settings(
        data_dir=data,
        models_cache=Settings.from_env().models_cache,
        db_url=db_url or f"sqlite:///{data / 'workbench.db'}",
    )


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session (skips with the reason when impossible)."""
    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    with running_server() as server:
        wait_connectable(server)
        yield server


# A test that takes ``settings`` (and so ``bench``, ``supervisors``, ``processes``) runs once on
# SQLite and once on PostgreSQL: what the engines do differently (claims under concurrency,
# locks, migrations, column types, constraints, transactions) is all reached through it.
# A test or module that only drives a flow through the same SQLAlchemy calls (the CLI's errors,
# the trackers, a task's jobs) says ``@pytest.mark.engines("sqlite")``: on both it
# doubled their time and found nothing the engine tests do not.
ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
ENGINE_NAMES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine_name" not in metafunc.fixturenames:
        return
    mark = metafunc.definition.get_closest_marker("engines")
    wanted = mark.args if mark else ENGINE_NAMES
    unknown = set(wanted) - set(ENGINE_NAMES)
    assert not unknown, f"unknown engines {unknown} in {metafunc.definition.nodeid}"
    params = [p for p, name in zip(ENGINES, ENGINE_NAMES, strict=True) if name in wanted]
    metafunc.parametrize("engine_name", params, indirect=True)


@pytest.fixture
def engine_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def quick_job(data: Path, **overrides: Any) -> dict[str, Any]:
    """A config that trains in seconds on the CPU."""
    base = {"data": str(data), "model": TINY_BERT, "method": "lora", "epochs": 1, "max_length": 16,
            "batch_size": 16, "lr": None}  # fmt: skip
    return {**base, **overrides}


def paced_job(data_dir: Path, epochs: int, **overrides: Any) -> dict[str, Any]:
    """A job that trains for ``epochs`` epochs of one to two seconds each (the tiny model, one row
    a step on long.csv): long enough to be caught running, killed after a checkpoint, or
    adopted, short enough to finish."""
    return quick_job(data_dir / "long.csv", epochs=epochs, batch_size=1, **overrides)


def long_job(data: Path, **overrides: Any) -> dict[str, Any]:
    """A config that keeps a worker busy for minutes (it is always stopped early): the tiny
    model trains an epoch of ``long.csv`` in about a second."""
    base = {"data": str(data), "model": TINY_BERT, "method": "lora", "epochs": 500, "max_length": 16,
            "batch_size": 8, "lr": None}  # fmt: skip
    return {**base, "early_stopping_patience": 0, **overrides}


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def wait_status(
    bench: Workbench, job_id: int, statuses: tuple[str, ...] = FINISHED, timeout: float = JOB_TIMEOUT
) -> dict[str, Any]:
    """Wait until job ``job_id`` has one of ``statuses``; returns the job."""

    def check() -> dict[str, Any] | None:
        job = bench.get_job(job_id, log_tail=0)
        return job if job["status"] in statuses else None

    return wait_for(check, timeout, f"job {job_id} to become {'/'.join(statuses)}")


def wait_running_step(bench: Workbench, job_id: int) -> dict[str, Any]:
    """Wait until a job is running and has logged at least one training step."""

    def check() -> dict[str, Any] | None:
        job = bench.get_job(job_id, log_tail=0)
        assert job["status"] in ("queued", "running"), job["error"]
        return job if job["status"] == "running" and (job["step"] or 0) >= 1 else None

    return wait_for(check, JOB_TIMEOUT, f"job {job_id} to run a step")


def kill_workers(settings: Settings) -> None:
    """Kill worker processes still running for this database (test teardown)."""
    bench = Workbench(settings)
    for job in bench.list_jobs():
        detail = bench.get_job(job["id"], log_tail=0)
        pid = detail["worker_pid"]
        if job["status"] == "running" and pid and process_alive(pid, None):
            os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def engine_settings(root: Path, engine: str, request: pytest.FixtureRequest) -> Iterator[Settings]:
    """Settings for a data folder under ``root`` and a database of its own on ``engine``
    ("sqlite" or "postgresql": a new database on the session's server); afterwards leftover
    workers are killed and a PostgreSQL database is dropped."""
    if engine == "sqlite":
        s = make_settings(root)
        yield s
        kill_workers(s)
        return
    server: PostgresServer = request.getfixturevalue("postgres")
    s = make_settings(root, server.new_database())
    try:
        yield s
    finally:
        kill_workers(s)
        server.drop_database(s.db_url)


@pytest.fixture
def settings(tmp_path: Path, engine_name: str, request: pytest.FixtureRequest) -> Iterator[Settings]:
    """An isolated data folder + database (SQLite or PostgreSQL), cleaned up afterwards."""
    with engine_settings(tmp_path, engine_name, request) as s:
        yield s


@pytest.fixture
def bench(settings: Settings) -> Workbench:
    return Workbench(settings)


@pytest.fixture
def supervisors(settings: Settings) -> Iterator[Callable[..., Supervisor]]:
    """Start in-process supervisors; all are stopped (their workers killed) afterwards."""
    with supervisor_pool(settings, max_concurrent=1) as start:
        yield start


@contextlib.contextmanager
def supervisor_pool(settings: Settings, **defaults: Any) -> Iterator[Callable[..., Supervisor]]:
    """``start(**kwargs)`` starts an in-process supervisor (polling every 0.2 s); on leaving,
    every one started is stopped and its workers killed."""
    started: list[Supervisor] = []

    def start(**kwargs: Any) -> Supervisor:
        sup = Supervisor(settings, poll_seconds=0.2, **{**defaults, **kwargs}).start()
        started.append(sup)
        return sup

    try:
        yield start
    finally:
        for sup in started:
            sup.stop(kill_workers=True)


def app_env(settings: Settings) -> dict[str, str]:
    """Environment for ``python app.py`` processes pointed at ``settings``."""
    return {
        **os.environ,
        "WORKBENCH_DATA_DIR": str(settings.data_dir),
        "WORKBENCH_DB_URL": settings.db_url,
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture
def processes(settings: Settings) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start ``python app.py ...`` processes (e.g. a supervisor); killed afterwards."""
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, host: str | None = None) -> subprocess.Popen[str]:
        """``host``: the process's machine name in the database (``WORKBENCH_HOST``)."""
        out = settings.data_dir.parent / f"process-{len(started)}.log"
        with out.open("w") as sink:  # a file, not a pipe nobody reads
            proc = subprocess.Popen(
                [sys.executable, "app.py", *args],
                cwd=PROJECT_ROOT,
                env=app_env(settings) | ({HOST_ENV: host} if host else {}),
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
            )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
