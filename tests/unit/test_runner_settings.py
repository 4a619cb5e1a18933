"""Choosing where jobs run: the runner settings, their checks and the CLI's answer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from backend.errors import ConfigError
from backend.settings import PROJECT_ROOT, Settings
from jobs.ray_runner import ray_reason, submission_id
from jobs.schema import Job


def settings_in(root: Path, **changes: object) -> Settings:
    return Settings(data_dir=root, models_cache=root / "models", db_url="sqlite://").with_(**changes)


def test_the_runner_must_be_known(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown runner 'slurm'"):
        settings_in(tmp_path, runner="slurm").check_runner()
    assert settings_in(tmp_path).check_runner().runner == "local"


def test_a_cluster_runner_refuses_an_artifact_root_it_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "artifacts").write_text("not a folder")
    with pytest.raises(ConfigError, match="cannot write the artifact root"):
        settings_in(tmp_path, runner="ray").check_runner()
    ok = settings_in(tmp_path / "ok", runner="ray").check_runner()
    assert list(ok.artifacts_dir.iterdir()) == []  # the write check leaves nothing behind


def test_the_environment_chooses_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RUNNER", "Ray")
    monkeypatch.setenv("WORKBENCH_RAY_ADDRESS", "http://head:8265")
    monkeypatch.setenv("WORKBENCH_RAY_CPUS", "0.5")
    s = Settings.from_env()
    assert (s.runner, s.ray_address, s.ray_cpus_per_job) == ("ray", "http://head:8265", 0.5)
    monkeypatch.setenv("WORKBENCH_RAY_CPUS", "two")
    with pytest.raises(ConfigError, match="WORKBENCH_RAY_CPUS must be a number"):
        Settings.from_env()


def test_a_submission_id_is_the_same_wherever_the_row_is_read() -> None:
    made = datetime(2026, 12, 2, 13, 0, 0, 123456)
    assert submission_id(Job(id=7, created_at=made)) == "workbench-7-20261202130000123456"
    assert submission_id(Job(id=7, created_at=made.replace(microsecond=1))) != submission_id(
        Job(id=7, created_at=made)
    )  # the same job id in another database is another submission


def test_ray_reasons_keep_rays_words() -> None:
    said = ray_reason("FAILED", "Job supervisor actor died:\n  its node was terminated", "workbench-1-x")
    assert said == "its Ray job workbench-1-x failed: Job supervisor actor died: its node was terminated"
    assert ray_reason("STOPPED", None, "r") == "its Ray job r was stopped"


def test_an_unreachable_cluster_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "app.py", "worker", "--ray-address", f"http://127.0.0.1:{port}"],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "cannot reach the Ray cluster" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
