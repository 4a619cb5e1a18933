"""What the app accepts from and shows to callers, without a server: uploads, model names, redaction."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gradio as gr
import pytest
from gradio.utils import get_upload_folder

from backend.errors import ConfigError
from service.access import check_model_name
from ui.callers import caller_is_local
from ui.exposure import TRACEBACK_HIDDEN, is_local_request, redact
from ui.uploads import SERVER_PATH_REFUSED, uploaded_file

CATALOGUE = ["all-MiniLM-L6-v2", "tiny-bert"]

JOB = {
    "id": 7,
    "status": "failed",
    "error": "model folder /srv/wb/models_cache/x has no usable config.json",
    "error_detail": 'Traceback (most recent call last):\n  File "/srv/wb/jobs/worker.py", line 1',
    "worker_pid": 4242,
    "worker_host": "gpu-node-3",
    "artifact_dir": "/srv/wb/runs/artifacts/job-7",
    "log_path": "/srv/wb/runs/artifacts/job-7/job.log",
    "config": {"data": "/srv/wb/runs/datasets/ab12/train.csv", "eval_data": "/srv/wb/d/eval.csv", "lr": 0.01},
    "metrics": {"accuracy": 0.9, "artifact_dir": "/srv/wb/runs/artifacts/job-7", "base_model_path": "/m"},
    "log": [
        "2025-01-01 10:00:00 worker started: job 7, pid 4242 on gpu-node-3",
        "2025-01-01 10:00:09 failed: cannot read /srv/wb/runs/datasets/ab12/train.csv",
        "2025-01-01 10:00:09 Traceback (most recent call last):",
        '2025-01-01 10:00:09   File "/srv/wb/backend/train.py", line 12, in run',
        "2025-01-01 10:00:09     raise DataError(msg)",
        "2025-01-01 10:00:09 backend.errors.DataError: bad row",
    ],
    "series": {"train_loss": [[1, 0.7]]},
}


def test_a_remote_caller_gets_no_traceback_pid_host_or_server_path() -> None:
    shown = redact(JOB)
    for key in ("error_detail", "worker_pid", "worker_host", "artifact_dir", "log_path"):
        assert key not in shown
    assert shown["config"] == {"data": "train.csv", "eval_data": "eval.csv", "lr": 0.01}
    assert shown["metrics"] == {"accuracy": 0.9}
    assert shown["error"] == "model folder x has no usable config.json"
    assert shown["log"] == [
        "2025-01-01 10:00:00 worker started: job 7, pid (hidden)",
        "2025-01-01 10:00:09 failed: cannot read train.csv",
        TRACEBACK_HIDDEN,
        "2025-01-01 10:00:09 backend.errors.DataError: bad row",
    ]
    assert shown["series"] == JOB["series"] and shown["id"] == 7
    assert "/srv" not in repr(shown) and "4242" not in repr(shown)
    assert JOB["worker_pid"] == 4242, "the original is not changed"


def test_redaction_reaches_lists_and_compare_diffs_and_keeps_ratios_and_hub_ids() -> None:
    compare = {"config_diff": [{"field": "data", "values": {"1": "/srv/a/x.csv", "2": "/srv/b/y.csv"}}]}
    assert redact(compare) == {"config_diff": [{"field": "data", "values": {"1": "x.csv", "2": "y.csv"}}]}
    datasets = [{"id": 1, "stored_file": "/srv/wb/runs/datasets/ab/train.csv"}]
    assert redact(datasets) == [{"id": 1, "stored_file": "train.csv"}]
    assert (
        redact("owner/model at lr 3/4, http://example.org/a") == "owner/model at lr 3/4, http://example.org/a"
    )


def request(host: str | None, **headers: str) -> gr.Request:
    """A gr.Request as Gradio builds one for a queued event (from kwargs)."""
    return gr.Request(client={"host": host, "port": 5000}, headers=headers)


@pytest.mark.parametrize(
    ("host", "headers", "local"),
    [
        ("127.0.0.1", {}, True),
        ("::1", {}, True),
        ("10.0.0.5", {}, False),
        ("127.0.0.1", {"x-forwarded-for": "203.0.113.9"}, False),  # a proxy on this machine
        (None, {}, False),
    ],
)
def test_only_direct_loopback_callers_count_as_local(host: str | None, headers: dict, local: bool) -> None:
    assert is_local_request(request(host, **headers)) is local
    assert caller_is_local(request(host, **headers)) is local


def test_an_in_process_caller_is_local() -> None:
    assert caller_is_local(None)


@pytest.mark.parametrize("name", ["", None, *CATALOGUE, "google-bert/bert-base-uncased", "Org/m-1.5_b"])
def test_listed_models_and_hub_ids_are_accepted(name: str | None) -> None:
    check_model_name(name, CATALOGUE)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("/tmp/x", "server paths are not accepted"),
        ("../x", "server paths are not accepted"),
        ("models_cache/../../etc", "server paths are not accepted"),
        ("~/models/x", "server paths are not accepted"),
        ("a/b/c", "neither a listed model nor a hub id"),
        ("bert-base-uncased", "neither a listed model nor a hub id"),  # hub ids are owner/name
        ("owner/.hidden", "neither a listed model nor a hub id"),
        ("tests/ui", "names a folder on the server"),  # relative to the app's folder
    ],
)
def test_local_paths_are_refused_with_a_specific_message(name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        check_model_name(name, CATALOGUE)
    assert "--allow-local-models" in str(caught.value)
    check_model_name(name, CATALOGUE, allow_local=True)


@pytest.fixture
def upload_dir() -> Iterator[Path]:
    """A folder inside Gradio's upload cache, as an upload makes one."""
    folder = Path(get_upload_folder()) / f"test-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    yield folder
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            path.rmdir()
    folder.rmdir()


def test_an_uploaded_file_is_accepted_in_every_shape(upload_dir: Path) -> None:
    csv = upload_dir / "data.csv"
    csv.write_text("text,label\na,b\n")
    for given in (str(csv), {"path": str(csv)}, gr.FileData(path=str(csv))):
        assert uploaded_file(given) == csv.resolve()


def test_server_paths_are_refused(upload_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.csv"
    outside.write_text("text,label\na,b\n")
    (upload_dir / "link.csv").symlink_to(outside)
    escapes: list[Any] = [
        str(outside),
        {"path": str(outside)},
        str(upload_dir / "link.csv"),  # a symlink out of the upload folder
        str(upload_dir / ".." / ".." / os.path.relpath(outside, upload_dir.parent.parent)),
        "relative/data.csv",
        "bad\0path",
    ]
    for given in escapes:
        with pytest.raises(ConfigError) as caught:
            uploaded_file(given)
        assert str(caught.value) == SERVER_PATH_REFUSED
    with pytest.raises(ConfigError, match="no file given"):
        uploaded_file({"path": ""})
