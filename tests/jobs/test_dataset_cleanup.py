"""Limits on datasets, deleting them, disk use, and the feature caches a deleted job leaves.

Real SQLite files, real files on disk; the probe jobs run in real worker processes.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from backend.errors import ConfigError, DataError
from backend.settings import Settings
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import quick_job, wait_status


def stored_files(settings: Settings) -> list[Path]:
    folder = settings.datasets_dir
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def test_a_file_with_too_many_rows_is_refused_and_nothing_is_stored(
    settings: Settings, data_dir: Path
) -> None:
    bench = Workbench(settings.with_(max_rows=50))
    tiny = data_dir / "tiny.csv"  # 60 rows
    with pytest.raises(DataError, match=r"tiny\.csv has 60 rows, over the limit of 50 rows"):
        bench.register_dataset(tiny)
    with pytest.raises(DataError, match="over the limit of 50 rows"):
        bench.submit(quick_job(tiny))  # the CLI's `submit --data` path
    assert bench.list_datasets() == [] and bench.list_jobs() == []
    assert stored_files(settings) == []


def test_a_file_over_the_size_limit_is_refused_naming_the_setting(settings: Settings, tmp_path: Path) -> None:
    bench = Workbench(settings.with_(max_upload_mb=1))
    big = tmp_path / "big.csv"
    with big.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", "label"])
        writer.writerows(
            (f"a fairly long review text number {i}", "pos" if i % 2 else "neg") for i in range(40_000)
        )
    assert big.stat().st_size > 2**20
    for attempt in (lambda: bench.register_dataset(big), lambda: bench.submit(quick_job(big))):
        with pytest.raises(
            DataError, match=r"big\.csv is 1\.\d MB, over the limit of 1\.0 MB.*WORKBENCH_MAX_UPLOAD_MB"
        ):
            attempt()
    assert bench.list_datasets() == [] and stored_files(settings) == []


def test_a_dataset_in_use_by_a_queued_job_is_kept_then_deleted_with_its_file(
    bench: Workbench, settings: Settings, data_dir: Path
) -> None:
    job_id = bench.submit(quick_job(data_dir / "tiny.csv"))  # no supervisor: it stays queued
    (dataset,) = bench.list_datasets()
    stored = Path(dataset["path"])
    assert stored.is_file()
    with pytest.raises(
        ConfigError, match=f"dataset {dataset['id']} is used by queued or running job\\(s\\) {job_id}"
    ):
        bench.delete_dataset(dataset["id"])
    assert stored.is_file() and len(bench.list_datasets()) == 1

    bench.cancel(job_id)
    assert bench.delete_dataset(dataset["id"]) == {"id": dataset["id"], "deleted": True, "file_removed": True}
    assert bench.list_datasets() == [] and not stored.exists() and not stored.parent.exists()
    assert bench.get_job(job_id)["dataset"] is None  # the finished job stays, without its dataset
    with pytest.raises(ConfigError, match=f"no dataset {dataset['id']}"):
        bench.delete_dataset(dataset["id"])


def test_a_stored_file_two_datasets_share_goes_with_the_last(
    bench: Workbench, settings: Settings, tmp_path: Path
) -> None:
    source = tmp_path / "two-texts.csv"
    rows = [(f"first text {i}", f"second text {i}", "ab"[i % 2]) for i in range(20)]
    with source.open("w", newline="") as fh:
        csv.writer(fh).writerows([("text", "other", "label"), *rows])
    one = bench.register_dataset(source, text_column="text")
    two = bench.register_dataset(source, text_column="other")  # same file, another mapping
    assert one["id"] != two["id"] and one["path"] == two["path"]
    assert bench.delete_dataset(one["id"])["file_removed"] is False
    assert Path(two["path"]).is_file()
    assert bench.delete_dataset(two["id"])["file_removed"] is True
    assert stored_files(settings) == []


def test_disk_usage_counts_each_part(bench: Workbench, settings: Settings, data_dir: Path) -> None:
    empty = bench.disk_usage()
    assert set(empty) == {"datasets", "artifacts", "exports", "cache", "total"}
    assert empty["datasets"] == 0
    bench.register_dataset(data_dir / "tiny.csv")
    usage = bench.disk_usage()
    assert usage["datasets"] == (data_dir / "tiny.csv").stat().st_size
    assert usage["total"] >= sum(v for k, v in usage.items() if k != "total")


def test_deleting_jobs_removes_feature_caches_no_other_job_uses(
    bench: Workbench, settings: Settings, data_dir: Path, supervisors: Callable[..., Supervisor]
) -> None:
    probe = quick_job(data_dir / "tiny.csv", method="probe")
    first = bench.submit(probe)
    second = bench.submit({**probe, "method_config": {"head": "mlp"}})  # same texts: same features
    supervisors()
    jobs = [wait_status(bench, i) for i in (first, second)]
    assert [j["status"] for j in jobs] == ["succeeded"] * 2, [j["error"] for j in jobs]
    keys = jobs[0]["metrics"]["feature_cache_keys"]
    assert len(keys) == 2 and jobs[1]["metrics"]["feature_cache_keys"] == keys  # train and eval
    files = [settings.feature_cache_dir / f"{key}.safetensors" for key in keys]
    assert all(f.is_file() for f in files)

    bench.delete(first)
    assert all(f.is_file() for f in files), "the second job still names them"
    bench.delete(second)
    assert not any(f.exists() for f in files)
