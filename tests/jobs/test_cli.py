"""The job commands of ``python app.py`` as a user runs them (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from backend.settings import PROJECT_ROOT, Settings
from tests.jobs.conftest import app_env


def app(settings: Settings, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run ``python app.py ARGS`` against the test database."""
    return subprocess.run(
        [sys.executable, "app.py", "--db-url", settings.db_url, *args],
        cwd=PROJECT_ROOT,
        env=app_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_submit_wait_then_inspect_export_delete(settings: Settings, data_dir: Path, tmp_path: Path) -> None:
    train_flags = ["--data", str(data_dir / "tiny.csv"), "--method", "probe", "--max-length", "16"]
    done = app(settings, "submit", *train_flags, "--wait")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])  # the same line train prints
    assert summary["method"] == "probe" and summary["learning_flag"] is None
    assert summary["accuracy"] > summary["majority_baseline"]["accuracy"]  # it learned the toy task
    assert {"trainable_params", "train_seconds", "artifact_dir", "adapter_bytes"} <= set(summary)
    assert "worker started" in done.stderr  # the job's log, followed on stderr

    listed = json.loads(app(settings, "jobs", "--json").stdout)
    assert [(j["id"], j["status"]) for j in listed] == [(1, "succeeded")]
    shown = app(settings, "show", "1")
    assert shown.returncode == 0 and "status: succeeded" in shown.stdout
    assert f"accuracy: {summary['accuracy']:.4f}  macro-F1: {summary['macro_f1']:.4f}" in shown.stdout
    assert f"{summary['accuracy']:.4f}" in app(settings, "jobs").stdout.splitlines()[1]  # the SCORE column
    assert json.loads(app(settings, "show", "1", "--json").stdout)["series"]["eval_accuracy"]

    out = tmp_path / "model.zip"
    exported = app(settings, "export", "1", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "probe_head.safetensors" in zipfile.ZipFile(out).namelist()

    assert app(settings, "delete", "1").returncode == 0
    missing = app(settings, "show", "1")
    assert missing.returncode == 2 and missing.stderr.strip() == "error: no job 1"


@pytest.mark.engines("sqlite")  # the CLI's flow; a PostgreSQL URL is the test above
def test_user_errors_exit_2_with_one_line(settings: Settings, data_dir: Path, tmp_path: Path) -> None:
    queued = app(settings, "submit", "--data", str(data_dir / "tiny.csv"), "--method", "lora")
    assert queued.returncode == 0 and json.loads(queued.stdout) == {"id": 1, "status": "queued"}
    cancelled = app(settings, "cancel", "1")
    assert json.loads(cancelled.stdout) == {"id": 1, "status": "cancelled"}
    for args, message in [
        (["cancel", "1"], "error: job 1 already finished (cancelled); nothing to cancel"),
        (["submit", "--data", str(tmp_path / "nope.csv"), "--method", "lora"], "file not found"),
        (["export", "1"], "error: job 1 is cancelled; only succeeded jobs have a trained model"),
        (["resume", "7"], "error: no job 7"),
    ]:
        result = app(settings, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    resumed = app(settings, "resume", "1")
    assert json.loads(resumed.stdout)["resumed_from"] == 1


@pytest.mark.engines("sqlite")  # the CLI's flow; a PostgreSQL URL is the test above
def test_datasets_are_listed_and_deleted_once_no_queued_job_uses_them(
    settings: Settings, data_dir: Path
) -> None:
    assert app(settings, "submit", "--data", str(data_dir / "tiny.csv"), "--method", "lora").returncode == 0
    (listed,) = json.loads(app(settings, "datasets", "--json").stdout)
    assert (listed["id"], listed["name"], listed["rows"]) == (1, "tiny", 60)
    stored = Path(listed["path"])
    refused = app(settings, "delete-dataset", "1")
    assert refused.returncode == 2 and stored.is_file()
    assert refused.stderr.strip() == (
        "error: dataset 1 is used by queued or running job(s) 1; cancel them "
        "(python app.py cancel ID) or let them finish, then delete it"
    )
    assert app(settings, "cancel", "1").returncode == 0
    deleted = app(settings, "delete-dataset", "1")
    assert json.loads(deleted.stdout) == {"id": 1, "deleted": True, "file_removed": True}
    assert not stored.exists()
    table = app(settings, "datasets")
    assert table.returncode == 0 and "no datasets yet" in table.stderr
    again = app(settings, "delete-dataset", "1")
    assert again.returncode == 2 and again.stderr.strip() == "error: no dataset 1"
