"""What a worker process inherits: not the web app's password."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.runner import worker_environment
from tests.jobs.conftest import make_settings


def test_workers_do_not_get_the_app_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_AUTH", "ann:s3cret")
    monkeypatch.setenv("HF_TOKEN", "hf_kept")  # gated hub models still need it in the worker
    settings = make_settings(tmp_path)
    env = worker_environment(settings, None)
    assert "WORKBENCH_AUTH" not in env
    assert env["HF_TOKEN"] == "hf_kept"
    assert env["WORKBENCH_DATA_DIR"] == str(settings.data_dir)
    assert "s3cret" not in repr(env)


def test_a_ray_job_carries_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jobs.ray_runner import CLUSTER_JOB_ENV, cluster_environment

    monkeypatch.setenv("WORKBENCH_AUTH", "ann:s3cret")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")  # a Ray node logs in to the hub with its own
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    url = "postgresql+psycopg://team:pa55word@db.example:5432/workbench"
    settings = make_settings(tmp_path, url)
    env = cluster_environment(settings)
    assert env["WORKBENCH_DB_URL"] == "postgresql+psycopg://team@db.example:5432/workbench"
    assert env["WORKBENCH_DATA_DIR"] == str(settings.data_dir) and env["HF_HUB_OFFLINE"] == "1"
    assert not {"WORKBENCH_AUTH", "HF_TOKEN", "PATH", CLUSTER_JOB_ENV} & set(env)
    assert "pa55word" not in repr(env) and "s3cret" not in repr(env) and "hf_secret" not in repr(env)


def test_a_node_that_cannot_write_the_artifact_root_fails_the_job_clearly(
    tmp_path: Path, data_dir: Path
) -> None:
    """The real worker process, on a "node" whose artifact root is not a writable folder."""
    import subprocess
    import sys

    from backend.settings import PROJECT_ROOT
    from jobs import queue
    from jobs.db import Database
    from service.api import Workbench
    from tests.jobs.conftest import app_env, quick_job

    settings = make_settings(tmp_path)
    bench = Workbench(settings)
    job_id = bench.submit(quick_job(data_dir / "tiny.csv"))
    settings.artifacts_dir.parent.mkdir(parents=True, exist_ok=True)
    settings.artifacts_dir.write_text("a file where the shared folder should be mounted")
    assert queue.claim_next(Database(settings.db_url), "test", "this-host") == job_id
    done = subprocess.run(
        [sys.executable, "-m", "jobs.worker", str(job_id)],
        cwd=PROJECT_ROOT, env=app_env(settings), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = bench.get_job(job_id, log_tail=0)
    assert job["status"] == "failed" and job["error_kind"] == "user"
    assert "cannot write the artifact root" in job["error"] and "every node must mount" in job["error"]
