"""The public API from a script: gradio_client against the real server and real jobs."""

from __future__ import annotations

import csv
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.jobs.conftest import wait_for
from tests.tiny_models import TINY_BERT
from tests.ui.conftest import CLIENT_TIMEOUT, JOB_TIMEOUT, Server, start_server, stop_server, wait_finished
from tests.unit.service.test_cli import cli

QUICK = {"epochs": 1, "max_length": 32, "batch_size": 16, "model": TINY_BERT}
PUBLIC = (
    "/upload_dataset", "/load_example", "/delete_dataset", "/launch", "/jobs", "/job", "/cancel", "/compare",
    "/export",
)  # fmt: skip
SERVER_PATHS_REFUSED = "server paths are not accepted: upload the file itself"


@pytest.fixture(scope="module")
def two_runs(client: Any, tiny_csv: Path) -> dict[str, Any]:
    """A CSV uploaded, then a LoRA and a probing run launched and finished, all via the API."""
    from gradio_client import handle_file

    dataset = client.predict(file=handle_file(str(tiny_csv)), api_name="/upload_dataset")
    lora = client.predict(
        dataset_id=dataset["id"], method="LoRA", method_settings={"rank": 4}, api_name="/launch", **QUICK
    )
    probe = client.predict(
        dataset_id=dataset["id"],
        method="probe",
        api_name="/launch",
        method_settings={"sweep_layers": True},
        **QUICK,
    )
    rows = wait_finished(client, [lora["id"], probe["id"]])
    return {"dataset": dataset, "lora": lora, "probe": probe, "rows": rows}


def test_the_named_endpoints_are_public(client: Any) -> None:
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(PUBLIC) <= set(named)
    launch = {p["parameter_name"] for p in named["/launch"]["parameters"]}
    assert {
        "dataset_id",
        "method",
        "method_settings",
        "epochs",
        "lr",
        "batch_size",
        "max_length",
        "quant",
    } <= launch


def test_the_example_dataset_loads_with_its_labels_and_once(client: Any) -> None:
    """/load_example registers the dataset that ships with the app; a second call finds it."""
    first = client.predict(api_name="/load_example")
    assert first["rows"] == 386 and first["name"] == "support tickets (example)"
    assert first["mapping"] == {"text": "text", "text_pair": None, "label": "label"}
    assert first["label_counts"] == {"account": 90, "billing": 107, "delivery": 96, "technical": 93}
    assert client.predict(api_name="/load_example")["id"] == first["id"]
    listed = [d["id"] for d in client.predict(api_name="/datasets")]
    assert listed.count(first["id"]) == 1


def test_upload_returns_the_detected_mapping(two_runs: dict[str, Any]) -> None:
    dataset = two_runs["dataset"]
    assert dataset["rows"] == 80
    assert dataset["mapping"] == {"text": "text", "text_pair": None, "label": "label"}
    assert dataset["label_counts"] == {"neg": 40, "pos": 40}


def test_launched_jobs_succeed_with_their_settings(client: Any, two_runs: dict[str, Any]) -> None:
    lora, probe = two_runs["lora"], two_runs["probe"]
    assert (lora["method"], probe["method"]) == ("lora", "probe")
    for job in (lora, probe):
        row = two_runs["rows"][job["id"]]
        assert row["status"] == "succeeded", row["error"]
        assert row["accuracy"] is not None
    detail = client.predict(job_id=lora["id"], api_name="/job")
    assert detail["config"]["method_config"] == {"rank": 4}
    # A caller on this machine gets every detail: where the files are, which process ran it.
    assert Path(detail["artifact_dir"]).is_dir() and Path(detail["log_path"]).is_file()
    assert Path(detail["config"]["data"]).is_absolute() and detail["worker_pid"] > 0
    assert any(
        "pid" in line for line in client.predict(job_id=lora["id"], log_tail=1000, api_name="/job")["log"]
    )
    assert (detail["config"]["epochs"], detail["config"]["max_length"]) == (1, 32)
    assert detail["series"]["train_loss"], "a finished run has a loss curve"
    assert client.predict(job_id=probe["id"], api_name="/job")["layer_accuracy"]


def test_compare_returns_both_runs(client: Any, two_runs: dict[str, Any]) -> None:
    ids = [two_runs["lora"]["id"], two_runs["probe"]["id"]]
    result = client.predict(job_ids=ids, api_name="/compare")
    assert [row["id"] for row in result["table"]] == ids
    assert all(row["trainable_params"] > 0 and row["accuracy"] is not None for row in result["table"])
    assert set(result["per_class_f1"]) == {str(i) for i in ids}
    assert {d["field"] for d in result["config_diff"]} >= {"method", "method_config.rank"}
    assert result["confusion"][str(ids[0])]["labels"] == ["neg", "pos"]


def test_export_is_a_zip_that_plain_peft_loads_and_predicts_with(
    client: Any, two_runs: dict[str, Any], tmp_path: Path
) -> None:
    import torch

    zip_path = client.predict(job_id=two_runs["lora"]["id"], api_name="/export")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path)
    assert {"adapter_config.json", "adapter_model.safetensors", "labels.json", "README.md"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert "PeftModel.from_pretrained" in (tmp_path / "README.md").read_text()
    # The zip holds no texts unless asked; the run folder (a loopback caller sees it) does.
    artifact = Path(client.predict(job_id=two_runs["lora"]["id"], api_name="/job")["artifact_dir"])
    check = json.loads((artifact / "check_predictions.json").read_text())
    probs, labels = _predict_with_plain_peft(tmp_path, check["texts"])
    assert labels == ["neg", "pos"]
    assert abs(probs - torch.tensor(check["probs"])).max() < 1e-4


def _predict_with_plain_peft(folder: Path, texts: list[str]) -> tuple[Any, list[str]]:
    """What a user's script does with the zip: transformers + peft, nothing from this project
    (the base by its hub id, found offline in the project's HF_HOME)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    manifest = json.loads((folder / "workbench.json").read_text())
    id2label = {int(k): v for k, v in json.loads((folder / "labels.json").read_text())["id2label"].items()}
    base = AutoModelForSequenceClassification.from_pretrained(
        manifest["base_model"], num_labels=len(id2label), id2label=id2label
    )
    model = PeftModel.from_pretrained(base, str(folder)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    enc = tokenizer(
        texts, truncation=True, max_length=manifest["max_length"], padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        probs = torch.softmax(model(**enc).logits, -1)
    return probs, [id2label[i] for i in sorted(id2label)]


def test_a_lora_run_merges_into_a_plain_transformers_model(
    client: Any, two_runs: dict[str, Any], tmp_path: Path
) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from backend.artifacts.merge import merge_lora

    detail = client.predict(job_id=two_runs["lora"]["id"], api_name="/job")
    zip_path = merge_lora(detail["artifact_dir"], tmp_path / "merged.zip")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path / "merged")
    model = AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "merged")).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / "merged"))
    check = json.loads((Path(detail["artifact_dir"]) / "check_predictions.json").read_text())
    enc = tokenizer(check["texts"], truncation=True, max_length=32, padding=True, return_tensors="pt")
    with torch.no_grad():
        probs = torch.softmax(model(**enc).logits, -1)
    assert abs(probs - torch.tensor(check["probs"])).max() < 1e-3
    assert model.config.id2label == {0: "neg", 1: "pos"}
    assert not any("lora" in name for name, _ in model.named_parameters())


def test_a_caller_from_another_machine_gets_no_server_details(
    server: Server, two_runs: dict[str, Any]
) -> None:
    """Through a proxy (the app on loopback sees X-Forwarded-For): file names only, no pids."""
    from gradio_client import Client

    remote = Client(
        server.url, verbose=False, httpx_kwargs=CLIENT_TIMEOUT, headers={"X-Forwarded-For": "203.0.113.9"}
    )
    lora_id, probe_id = two_runs["lora"]["id"], two_runs["probe"]["id"]
    detail = remote.predict(job_id=lora_id, log_tail=1000, api_name="/job")
    assert not {"artifact_dir", "log_path", "worker_pid", "worker_host", "error_detail"} & set(detail)
    assert "artifact_dir" not in detail["metrics"] and detail["metrics"]["accuracy"] is not None
    assert detail["config"]["data"] == "tiny.csv" and detail["log"]
    answers = {
        "job": detail,
        "jobs": remote.predict(api_name="/jobs"),
        "datasets": remote.predict(api_name="/datasets"),
        "compare": remote.predict(job_ids=[lora_id, probe_id], api_name="/compare"),
    }
    data_dir = str(server.settings.data_dir)
    for name, answer in answers.items():
        text = json.dumps(answer)
        assert data_dir not in text and not re.search(r"\bpid \d", text), name
    assert {d["stored_file"] for d in answers["datasets"]} >= {"tiny.csv"}


def test_server_paths_are_refused_and_nothing_is_stored(client: Any, tmp_path: Path) -> None:
    from gradio_client.exceptions import AppError

    secret = tmp_path / "secret.csv"
    secret.write_text("text,label\nthe server's own table,a\nmore,b\n")
    before = client.predict(api_name="/datasets")
    for given in (str(secret), {"path": str(secret)}):
        with pytest.raises(AppError, match=SERVER_PATHS_REFUSED):
            client.predict(file=given, api_name="/upload_dataset")
    assert client.predict(api_name="/datasets") == before


def _uploads_named(name: str) -> list[Path]:
    """Files called ``name`` in Gradio's upload folder (the server inherits the tests' one)."""
    from gradio.utils import get_upload_folder

    return [p for p in Path(get_upload_folder()).rglob(name) if p.is_file()]


def test_an_upload_is_named_after_its_file_and_can_be_deleted(client: Any, tmp_path: Path) -> None:
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"upload name check {i},{'ab'[i % 2]}\n" for i in range(12)))
    dataset = client.predict(file=handle_file(str(train)), api_name="/upload_dataset")
    assert dataset["name"] == "train"  # not Gradio's hash folder + "-train"
    assert _uploads_named("train.csv") == [], "the uploaded copy is removed once stored"

    deleted = client.predict(dataset_id=dataset["id"], api_name="/delete_dataset")
    assert deleted == {"id": dataset["id"], "deleted": True, "file_removed": True}
    assert dataset["id"] not in [d["id"] for d in client.predict(api_name="/datasets")]
    assert not Path(dataset["stored_file"]).exists()
    with pytest.raises(AppError, match=f"no dataset {dataset['id']}"):
        client.predict(dataset_id=dataset["id"], api_name="/delete_dataset")
    with pytest.raises(AppError, match="dataset_id must be a whole number"):
        client.predict(dataset_id="../1", api_name="/delete_dataset")


def test_a_refused_upload_leaves_no_copy_behind(client: Any, tmp_path: Path) -> None:
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    bad = tmp_path / "refused-upload.csv"
    bad.write_text("text,label\n")
    before = client.predict(api_name="/datasets")
    with pytest.raises(AppError, match=r"refused-upload\.csv: no data rows"):
        client.predict(file=handle_file(str(bad)), api_name="/upload_dataset")
    assert _uploads_named(bad.name) == [] and client.predict(api_name="/datasets") == before


def test_models_are_listed_or_hub_ids_not_server_folders(client: Any, tiny_csv: Path) -> None:
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    dataset = client.predict(file=handle_file(str(tiny_csv)), api_name="/upload_dataset")
    jobs_before = len(client.predict(api_name="/jobs"))
    for model in ("/tmp/x", "../x"):
        with pytest.raises(AppError, match=f"model '{re.escape(model)}': server paths are not accepted"):
            client.predict(dataset_id=dataset["id"], method="lora", model=model, api_name="/launch")
    # A hub id passes the check and fails later, offline, for a different reason.
    with pytest.raises(AppError, match="model 'someone/no-such-model' is not available") as caught:
        client.predict(
            dataset_id=dataset["id"], method="lora", model="someone/no-such-model", api_name="/launch"
        )
    assert "server paths" not in str(caught.value)
    assert len(client.predict(api_name="/jobs")) == jobs_before


def test_predictions_csv_quotes_formula_like_cells(
    client: Any, two_runs: dict[str, Any], tmp_path: Path
) -> None:
    """CLI predict on a run made through the API; a text starting with "=" stays text."""
    artifact = client.predict(job_id=two_runs["lora"]["id"], api_name="/job")["artifact_dir"]
    data, out = tmp_path / "new.csv", tmp_path / "predictions.csv"
    with data.open("w", newline="") as fh:
        csv.writer(fh).writerows([["text"], ["=1+1"], ["@SUM(A1)"], ["a wonderful film"]])
    done = cli("predict", "--artifact", artifact, "--data", str(data), "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(out.open(newline="")))
    assert [r["text"] for r in rows] == ["'=1+1", "'@SUM(A1)", "a wonderful film"]
    assert all(r["predicted_label"] in ("neg", "pos") for r in rows)


def test_errors_come_back_as_messages(client: Any, two_runs: dict[str, Any]) -> None:
    from gradio_client.exceptions import AppError

    dataset_id = two_runs["dataset"]["id"]
    with pytest.raises(AppError, match="unknown method 'nope'"):
        client.predict(dataset_id=dataset_id, method="nope", api_name="/launch")
    with pytest.raises(AppError, match="no dataset 9999"):
        client.predict(dataset_id=9999, method="lora", api_name="/launch")
    with pytest.raises(AppError, match="LoRA rank must be between"):
        client.predict(dataset_id=dataset_id, method="lora", method_settings={"rank": 0}, api_name="/launch")
    with pytest.raises(AppError, match="only succeeded jobs"):
        client.predict(job_id=_queued_then_cancelled(client, dataset_id), api_name="/export")


def _queued_then_cancelled(client: Any, dataset_id: int) -> int:
    job = client.predict(dataset_id=dataset_id, method="lora", api_name="/launch", **QUICK)
    cancelled = client.predict(job_id=job["id"], api_name="/cancel")
    assert cancelled["id"] == job["id"]
    wait_finished(client, [job["id"]])
    return job["id"]


def test_a_restarted_app_shows_the_same_jobs(
    server: Server, client: Any, two_runs: dict[str, Any], tmp_path: Path
) -> None:
    """Every view is read from the database: a second app on the same data sees the same runs."""
    from gradio_client import Client

    before = {j["id"]: (j["status"], j["accuracy"]) for j in client.predict(api_name="/jobs")}
    second = start_server(tmp_path, "--no-supervisor", data_dir=server.settings.data_dir)
    try:
        after = Client(second.url, verbose=False, httpx_kwargs=CLIENT_TIMEOUT).predict(api_name="/jobs")
    finally:
        stop_server(second, kill_jobs=False)  # the first server's workers are not its to kill
    assert {j["id"]: (j["status"], j["accuracy"]) for j in after} == before


def test_with_auth_the_api_needs_the_password(tmp_path: Path) -> None:
    """The password comes from a file, so `ps` does not show it."""
    from gradio_client import Client

    secret = tmp_path / "auth"
    secret.write_text("ann:s3cret\n")
    secret.chmod(0o600)
    locked = start_server(tmp_path, "--auth-file", str(secret), "--no-supervisor")
    try:
        assert b"s3cret" not in Path(f"/proc/{locked.process.pid}/cmdline").read_bytes()
        with pytest.raises(Exception, match="credentials"):
            Client(locked.url, verbose=False, httpx_kwargs=CLIENT_TIMEOUT)
        assert (
            Client(locked.url, auth=("ann", "s3cret"), verbose=False, httpx_kwargs=CLIENT_TIMEOUT).predict(
                api_name="/jobs"
            )
            == []
        )
    finally:
        stop_server(locked, kill_jobs=False)


def test_a_sweep_through_the_api_runs_its_grid_and_flags_its_front(
    client: Any, two_runs: dict[str, Any]
) -> None:
    """/launch_sweep, /sweeps and /sweep from a script: a 2-point rank grid runs both points
    and reports each with its costs; a lone front point must dominate nothing it should not."""
    started = client.predict(
        dataset_id=two_runs["dataset"]["id"],
        method="lora",
        grid=["rank=1,16"],
        lr=3e-3,
        api_name="/launch_sweep",
        **QUICK,
    )
    sweep_id = started["sweep_id"]
    assert sweep_id in [s["id"] for s in client.predict(api_name="/sweeps")]

    def ended() -> dict[str, Any] | None:
        detail = client.predict(sweep_id=sweep_id, api_name="/sweep")
        return detail if detail["status"] != "running" else None

    detail = wait_for(ended, 2 * JOB_TIMEOUT, f"sweep {sweep_id}")
    trials = detail["trials"]
    assert [t["params"] for t in trials] == [{"rank": 1}, {"rank": 16}]
    assert [t["status"] for t in trials] == ["succeeded", "succeeded"]
    small, big = trials
    assert small["trainable_params"] < big["trainable_params"]
    assert small["adapter_bytes"] < big["adapter_bytes"]
    # With two points, the cheaper one is always on the trainable-parameter front; the bigger
    # one only if it is strictly more accurate.
    assert small["pareto_by"]["trainable_params"] is True
    assert big["pareto_by"]["trainable_params"] == (big["accuracy"] > small["accuracy"])
    best = max(trials, key=lambda t: (t["accuracy"], -t["trainable_params"]))
    assert detail["best_job_id"] == best["job_id"]


def test_report_is_one_html_file_of_the_compared_runs(
    server: Server, client: Any, two_runs: dict[str, Any]
) -> None:
    """/report: a self-contained HTML file naming both runs; a caller from another machine
    gets its own copy without the server's paths."""
    from gradio_client import Client

    ids = [two_runs["lora"]["id"], two_runs["probe"]["id"]]
    local = Path(client.predict(job_ids=ids, api_name="/report"))
    page = local.read_text(encoding="utf-8")
    assert local.suffix == ".html" and all(f"#{i} " in page for i in ids) and "<svg" in page
    remote = Client(
        server.url, verbose=False, httpx_kwargs=CLIENT_TIMEOUT, headers={"X-Forwarded-For": "203.0.113.9"}
    )
    shared = Path(remote.predict(job_ids=ids, api_name="/report")).read_text(encoding="utf-8")
    assert all(f"#{i} " in shared for i in ids) and str(server.settings.data_dir) not in shared
