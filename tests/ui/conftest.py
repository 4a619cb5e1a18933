"""A real app server for the UI tests: ``python -m ui.server`` in a subprocess.

One server per test session, on a free port, with its own data folder and database,
running the real supervisor and real worker processes on the real default model.
It is stopped (and any worker still running is killed) when the session ends.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backend.settings import PROJECT_ROOT, Settings
from service.api import Workbench
from tests.jobs.conftest import kill_workers, wait_for

START_TIMEOUT = 120.0  # cold imports on a busy 2-core machine
# Every gradio_client call gives up after this long without a byte (httpx's read timeout): a call
# that never returns is a failure with a message, not a held run.
CLIENT_TIMEOUT = {"timeout": 120.0}
JOB_TIMEOUT = 300.0
ARTIFACTS = PROJECT_ROOT / "test-artifacts" / "ui"


@dataclass
class Server:
    """A running app: where it listens and where it keeps its data."""

    url: str
    settings: Settings
    log: Path
    process: subprocess.Popen[bytes]

    def workbench(self) -> Workbench:
        """A Workbench on the server's database (to check what the UI created)."""
        return Workbench(self.settings)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_server(root: Path, *extra: str, data_dir: Path | None = None) -> Server:
    """Start ``python -m ui.server`` on a free port (data: ``data_dir`` or under ``root``);
    wait for HTTP 200. ``extra``: more command-line flags."""
    data = data_dir or root / "data"
    settings = Settings(
        data_dir=data,
        models_cache=Settings.from_env().models_cache,
        db_url=f"sqlite:///{data / 'workbench.db'}",
    )
    port = free_port()
    env = {
        **os.environ,
        "WORKBENCH_DATA_DIR": str(data),
        "WORKBENCH_DB_URL": settings.db_url,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("WORKBENCH_AUTH", None)
    root.mkdir(parents=True, exist_ok=True)
    log = root / f"server-{port}.log"
    with log.open("wb") as sink:  # a file, not a pipe nobody reads
        process = subprocess.Popen(
            [sys.executable, "-m", "ui.server", "--port", str(port), *extra],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = Server(f"http://127.0.0.1:{port}/", settings, log, process)

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        return http_ok(server.url)

    wait_for(up, START_TIMEOUT, "the app to answer HTTP 200", interval=0.3)
    return server


def stop_server(server: Server, *, kill_jobs: bool = True) -> None:
    """SIGTERM (a clean stop), then SIGKILL if it hangs; then kill leftover workers."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)
    if kill_jobs:
        kill_workers(server.settings)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app, shared by every UI test (jobs queue behind each other on 2 cores)."""
    running = start_server(tmp_path_factory.mktemp("ui-server"))
    yield running
    stop_server(running)


@pytest.fixture(scope="session")
def client(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A gradio_client on the server; downloads go to a temporary folder."""
    from gradio_client import Client

    downloads = str(tmp_path_factory.mktemp("downloads"))
    return Client(server.url, verbose=False, download_files=downloads, httpx_kwargs=CLIENT_TIMEOUT)


def wait_finished(client: Any, job_ids: list[int], timeout: float = JOB_TIMEOUT) -> dict[int, dict[str, Any]]:
    """Poll /jobs until every job in ``job_ids`` has finished; their rows by id."""

    def check() -> dict[int, dict[str, Any]] | None:
        rows = {j["id"]: j for j in client.predict(api_name="/jobs") if j["id"] in job_ids}
        done = all(rows.get(i, {}).get("status") in ("succeeded", "failed", "cancelled") for i in job_ids)
        return rows if done else None

    return wait_for(check, timeout, f"jobs {job_ids} to finish", interval=1.0)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots go (git-ignored; CI uploads it)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
