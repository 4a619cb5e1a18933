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
