"""Three real jobs through the queue, then everything the API does with finished jobs."""

from __future__ import annotations

import itertools
import json
import zipfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from backend.errors import ConfigError
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import kill_workers, make_settings, quick_job, wait_status


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[dict[str, Any]]:
    """Three jobs submitted at once, run by one supervisor; their ids and the workbench."""
    settings = make_settings(tmp_path_factory.mktemp("finished"))
    bench = Workbench(settings)
    ids = [
        bench.submit(quick_job(data_dir / "tiny.csv", method_config={"rank": 2}, lr="auto")),
        bench.submit(quick_job(data_dir / "tiny.csv", method_config={"rank": 4}, lr=5e-4), name="second"),
        bench.submit(quick_job(data_dir / "tiny.csv", method="probe", method_config={"sweep_layers": True})),
    ]
    supervisor = Supervisor(settings, max_concurrent=1, poll_seconds=0.2).start()
    try:
        jobs = [wait_status(bench, i) for i in ids]
    finally:
        supervisor.stop(kill_workers=True)
        kill_workers(settings)
    yield {"bench": bench, "ids": ids, "jobs": jobs, "settings": settings}


def test_three_jobs_run_in_order_and_each_has_metric_rows(finished: dict[str, Any]) -> None:
    jobs = finished["jobs"]
    assert [j["status"] for j in jobs] == ["succeeded"] * 3, [j["error"] for j in jobs]
    for before, after in itertools.pairwise(jobs):
        assert datetime.fromisoformat(after["started"]) >= datetime.fromisoformat(before["finished"])
    for job in jobs[:2]:
        assert job["series"]["eval_accuracy"], job["id"]
    sweep = jobs[2]["series"]  # the probe sweeps its layers: results by layer, not by epoch
    assert [layer for layer, _ in sweep["layer_accuracy"]] == list(range(7))
    assert not sweep["eval_accuracy"]
    for job in jobs:
        assert job["progress"] == 1.0
        assert job["accuracy"] is not None and job["trainable_params"] > 0
    assert jobs[0]["series"]["train_loss"] and jobs[0]["series"]["learning_rate"]
    # Throughput: live per step, and the run's own figure at the end (none for a probe's head).
    assert all(value > 0 for _, value in jobs[0]["series"]["tokens_per_second"])
    assert jobs[0]["metrics"]["tokens_per_second"] > 0 and 0 < jobs[0]["metrics"]["mfu"] < 1
    assert not jobs[2]["series"]["tokens_per_second"]
    assert [row["id"] for row in finished["bench"].list_jobs()] == finished["ids"][::-1]


def test_list_rows_and_names(finished: dict[str, Any]) -> None:
    rows = {row["id"]: row for row in finished["bench"].list_jobs()}
    first, second, probe = (rows[i] for i in finished["ids"])
    assert first["name"] == "lora r=2 · tiny"
    assert second["name"] == "second" and second["knobs"] == "r=4"
    assert probe["knobs"] == "all layers"
    assert first["dataset"] == "tiny" and first["quant"] == "none"
    detail = finished["bench"].get_job(probe["id"])
    assert len(detail["layer_accuracy"]) == 7  # embeddings + 6 layers of MiniLM-L6
    assert detail["device"] == "cpu" and detail["metrics"]["method"] == "probe"
    assert any("succeeded" in line for line in detail["log"])
    with pytest.raises(ConfigError, match="no job 999"):
        finished["bench"].get_job(999)


def test_compare(finished: dict[str, Any]) -> None:
    ids = finished["ids"]
    result = finished["bench"].compare(ids)
    assert [row["id"] for row in result["table"]] == ids
    assert all(0 < row["trainable_percent"] < 100 for row in result["table"])
    fields = {d["field"]: d["values"] for d in result["config_diff"]}
    assert fields["method_config.rank"] == {ids[0]: 2, ids[1]: 4, ids[2]: None}
    assert fields["lr"][ids[1]] == 5e-4
    assert [(row["lr_auto"], row["learning_flag"]) for row in result["table"][:2]] == [
        (True, None),
        (False, None),
    ]
    # One evaluation split for all three: one majority-class reference row, from that split.
    (baseline,) = result["baselines"]
    assert baseline["jobs"] == ids and baseline["accuracy"] == 0.5  # tiny.csv's hold-out: 3 pos, 3 neg
    assert "data" not in fields  # the same stored file for all three
    assert set(result["per_class_f1"][ids[0]]) == {"neg", "pos"}
    confusion = result["confusion"][ids[1]]
    assert confusion["labels"] == ["neg", "pos"] and len(confusion["matrix"]) == 2
    assert set(result["series"]) == set(ids)


def test_the_learning_rate_search_is_recorded_in_the_job(finished: dict[str, Any]) -> None:
    bench, (auto_id, fixed_id, _) = finished["bench"], finished["ids"]
    detail = bench.get_job(auto_id, log_tail=200)
    search = detail["lr_search"]
    assert detail["config"]["lr"] == "auto" and detail["metrics"]["lr"] == search["chosen"]
    assert len(search["candidates"]) == 4 and all(c["steps"] > 0 for c in search["candidates"])
    assert any("learning-rate search round 1/2" in line for line in detail["log"])
    assert any(f"learning rate {search['chosen']:g} chosen by search" in line for line in detail["log"])
    assert bench.get_job(fixed_id)["lr_search"] is None


def test_export_and_predict(finished: dict[str, Any]) -> None:
    bench, ids = finished["bench"], finished["ids"]
    path = bench.export(ids[0])
    assert path.parent == finished["settings"].data_dir / "exports"
    names = zipfile.ZipFile(path).namelist()
    assert "adapter_model.safetensors" in names
    assert not any(n.startswith("checkpoint/") for n in names)
    results = bench.predict(ids, ["the film was brilliant and fun", "the plot was awful and dull"])
    assert [r["id"] for r in results] == ids
    assert all(len(result["predictions"]) == 2 for result in results)
    # The probe sweep learns these words for sure; four LoRA steps may not yet.
    assert [p["label"] for p in results[2]["predictions"]] == ["pos", "neg"]
    # The model predict() loads from disk answers as the trained one did at the end of training.
    for job_id in ids:
        check = json.loads(
            (Path(bench.get_job(job_id)["artifact_dir"]) / "check_predictions.json").read_text()
        )
        answers = bench.predict([job_id], check["texts"])[0]["predictions"]
        assert [p["probability"] for p in answers] == pytest.approx(
            [max(p) for p in check["probs"]], abs=1e-5
        )


def test_delete_removes_rows_and_artifacts(finished: dict[str, Any]) -> None:
    bench, victim = finished["bench"], finished["ids"][1]
    folder = Path(bench.get_job(victim)["artifact_dir"])
    assert folder.is_dir()
    bench.delete(victim)
    assert not folder.exists()
    assert victim not in [row["id"] for row in bench.list_jobs()]
    with pytest.raises(ConfigError, match=f"no job {victim}"):
        bench.get_job(victim)
    with pytest.raises(ConfigError, match=f"no job {victim}"):
        bench.predict([victim], ["x"])
