"""Every record of ``service.records`` against the dicts the code really builds.

A real SQLite database, a real dataset and a real probing job (a layer sweep: seconds
on cached features) that a supervisor runs, plus one job left queued. A builder that
gains, loses or renames a key fails here until its record says the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from backend.settings import Settings
from jobs import views
from jobs.records import LearningRate
from jobs.schema import Job
from jobs.supervisor import Supervisor
from service import records
from service.api import Workbench
from tests.jobs.conftest import ENGINES, engine_settings, kill_workers, quick_job, wait_status


def assert_record(value: Mapping[str, Any], record: Any) -> None:
    """``value`` has every required key of the TypedDict ``record`` and no key it lacks."""
    assert isinstance(value, dict), f"{record.__name__}: not a plain dict but {type(value).__name__}"
    required, optional = record.__required_keys__, record.__optional_keys__
    assert required | optional == set(record.__annotations__)
    missing, extra = required - set(value), set(value) - required - optional
    assert not missing and not extra, f"{record.__name__}: missing {sorted(missing)}, extra {sorted(extra)}"


@pytest.fixture(scope="module", params=ENGINES)
def built(
    tmp_path_factory: pytest.TempPathFactory, data_dir: Path, request: pytest.FixtureRequest
) -> Iterator[dict[str, Any]]:
    """A workbench with a dataset, a finished probe sweep and a queued LoRA job (per engine)."""
    with engine_settings(tmp_path_factory.mktemp("records"), request.param, request) as settings:
        yield from _build(settings, data_dir)


def _build(settings: Settings, data_dir: Path) -> Iterator[dict[str, Any]]:
    bench = Workbench(settings)
    config = quick_job(data_dir / "tiny.csv", method="probe", method_config={"sweep_layers": True})
    probe = bench.submit(config)
    supervisor = Supervisor(settings, max_concurrent=1, poll_seconds=0.2).start()
    try:
        finished = wait_status(bench, probe)
    finally:
        supervisor.stop(kill_workers=True)
        kill_workers(settings)
    assert finished["status"] == "succeeded", finished["error"]
    queued = bench.submit(quick_job(data_dir / "tiny.csv"))  # no supervisor left: it waits
    yield {"bench": bench, "probe": probe, "queued": queued, "data": data_dir}


def _datasets(b: dict[str, Any]) -> list[Any]:
    bench = b["bench"]
    return [bench.register_dataset(b["data"] / "tiny.csv"), *bench.list_datasets()]


def _removal(b: dict[str, Any]) -> list[Any]:
    extra = b["bench"].register_dataset(b["data"] / "medium.csv", "to delete")
    return [b["bench"].delete_dataset(extra["id"])]


def _fields(b: dict[str, Any]) -> list[Any]:
    return [field for method in b["bench"].list_methods() for field in method["fields"]]


def _parameters(b: dict[str, Any]) -> list[Any]:
    bench = b["bench"]
    return [bench.count_parameters(bench.list_models()[0], "lora", None)]


def _plan(b: dict[str, Any]) -> list[Any]:
    bench = b["bench"]
    dataset_id = bench.list_datasets()[0]["id"]
    return [bench.plan_run(dataset_id, "lora", lr="auto"), bench.plan_run(dataset_id, "lora", lr=1e-3)]


def _details(b: dict[str, Any]) -> list[Any]:
    return [b["bench"].get_job(b[name], log_tail=5) for name in ("probe", "queued")]


def _compare(b: dict[str, Any]) -> dict[str, Any]:
    return b["bench"].compare([b["probe"], b["queued"]])


def _learning_rates(b: dict[str, Any]) -> list[Any]:
    with b["bench"].db.read() as session:
        return [views.learning_rate(session.get(Job, b[name])) for name in ("probe", "queued")]


def _predictions(b: dict[str, Any]) -> list[Any]:
    return b["bench"].predict([b["probe"]], ["a wonderful film", "dull and far too long"])


CASES: list[tuple[Any, Callable[[dict[str, Any]], list[Any]]]] = [
    (records.DatasetInfo, _datasets),
    (records.ColumnMapping, lambda b: [d["mapping"] for d in _datasets(b)]),
    (records.DatasetRemoval, _removal),
    (records.DatasetPreview, lambda b: [b["bench"].dataset_preview(b["bench"].list_datasets()[0]["id"])]),
    (
        records.HistogramBin,
        lambda b: b["bench"].dataset_preview(b["bench"].list_datasets()[0]["id"])["token_histogram"],
    ),
    (records.DiskUsage, lambda b: [b["bench"].disk_usage()]),
    (records.MethodInfo, lambda b: b["bench"].list_methods()),
    (records.TaskInfo, lambda b: b["bench"].list_tasks()),
    (records.RoleInfo, lambda b: [r for t in b["bench"].list_tasks() for r in t["roles"]]),
    (records.FieldInfo, _fields),
    (records.ParameterCount, _parameters),
    (records.RunPlan, _plan),
    (records.DeviceInfo, lambda b: [b["bench"].device_info()]),
    (records.ModelFacts, lambda b: [b["bench"].model_facts(None, "lora")]),
    (records.JobRow, lambda b: b["bench"].list_jobs()),
    (records.JobDetail, _details),
    (records.JobDetail, lambda b: [b["bench"].cancel(b["queued"])]),
    (records.CompareResult, lambda b: [_compare(b)]),
    (records.CompareRow, lambda b: _compare(b)["table"]),
    (records.MajorityRow, lambda b: _compare(b)["baselines"]),
    (records.ConfigDifference, lambda b: _compare(b)["config_diff"]),
    (records.Confusion, lambda b: [c for c in _compare(b)["confusion"].values() if c is not None]),
    (LearningRate, _learning_rates),
    (records.Prediction, _predictions),
    (records.LabelProbability, lambda b: [p for result in _predictions(b) for p in result["predictions"]]),
]


@pytest.mark.parametrize(
    ("record", "build"), CASES, ids=[f"{r.__name__}-{i}" for i, (r, _) in enumerate(CASES)]
)
def test_built_dicts_have_exactly_their_records_keys(
    built: dict[str, Any], record: Any, build: Callable[[dict[str, Any]], list[Any]]
) -> None:
    values = build(built)
    assert values, f"nothing built to check {record.__name__} against"
    for value in values:
        assert_record(value, record)


def test_a_probe_sweeps_detail_has_the_optional_layer_table(built: dict[str, Any]) -> None:
    """The one optional key is really there when it applies (else the check above is weaker)."""
    detail = built["bench"].get_job(built["probe"], log_tail=0)
    assert set(detail) == set(records.JobDetail.__annotations__)
    assert "layer_accuracy" not in built["bench"].get_job(built["queued"], log_tail=0)


def test_every_record_the_service_names_is_checked() -> None:
    """A new record in service.records needs a case above."""
    named = {
        getattr(records, name)
        for name in records.__all__
        if hasattr(getattr(records, name), "__required_keys__")
    }
    checked = {record for record, _ in CASES}
    # DatasetFields is only a base; PublicDataset and RunSummary are built by the UI's
    # endpoints (tests/ui/test_parts.py checks them).
    assert named - checked == {records.DatasetFields, records.PublicDataset, records.RunSummary}
