"""Submitting and registering: validation, stored copies, concurrency, the catalogue."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from backend.errors import ConfigError, DataError
from backend.settings import Settings
from service.api import Workbench
from tests.jobs.conftest import quick_job


def test_50_submissions_from_5_threads(bench: Workbench, data_dir: Path) -> None:
    ids: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def submit_ten() -> None:
        try:
            for _ in range(10):
                job_id = bench.submit(quick_job(data_dir / "tiny.csv"))
                with lock:
                    ids.append(job_id)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=submit_ten) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(ids) == len(set(ids)) == 50
    rows = bench.list_jobs()
    assert sorted(r["id"] for r in rows) == sorted(ids)
    assert {r["status"] for r in rows} == {"queued"}
    assert len(bench.list_datasets()) == 1  # one stored copy, reused by all 50


def test_register_twice_reuses_the_row(
    bench: Workbench, settings: Settings, data_dir: Path, tmp_path: Path
) -> None:
    first = bench.register_dataset(data_dir / "tiny.csv", "reviews")
    copy = tmp_path / "renamed.csv"
    copy.write_bytes((data_dir / "tiny.csv").read_bytes())
    again = bench.register_dataset(copy)
    assert again["id"] == first["id"] and again["name"] == "reviews"
    assert Path(first["path"]).parent == settings.datasets_dir / first["sha256"][:16]
    assert first["mapping"] == {"text": "text", "text_pair": None, "label": "label"}
    assert first["label_counts"] == {"neg": 30, "pos": 30} and first["rows"] == 60
    two_texts = tmp_path / "two_texts.csv"
    frame = pd.read_csv(copy)
    frame.assign(summary=frame["text"].str.upper()).to_csv(two_texts, index=False)
    by_text = bench.register_dataset(two_texts, text_column="text")
    by_summary = bench.register_dataset(two_texts, text_column="summary")
    assert by_text["id"] != by_summary["id"]  # same file, another mapping: another dataset
    assert by_text["path"] == by_summary["path"]  # but one stored copy
    preview = bench.dataset_preview(first["id"])
    assert preview["token_length"]["max"] > 0


def test_bad_data_writes_nothing(bench: Workbench, settings: Settings, tmp_path: Path) -> None:
    bad = tmp_path / "one_class.csv"
    pd.DataFrame({"text": ["a", "b", "c"], "label": ["x", "x", "x"]}).to_csv(bad, index=False)
    with pytest.raises(DataError):
        bench.register_dataset(bad)
    with pytest.raises(DataError):
        bench.submit({"data": str(bad), "method": "lora"})
    with pytest.raises(ConfigError, match="rank"):
        bench.submit({"data": str(bad), "method": "lora", "method_config": {"rank": 0}})
    assert bench.list_datasets() == [] and bench.list_jobs() == []
    assert not settings.datasets_dir.exists()


def test_submit_stores_copies_and_names_the_job(bench: Workbench, data_dir: Path) -> None:
    job_id = bench.submit(
        quick_job(
            data_dir / "tiny.csv",
            eval_data=str(data_dir / "medium.csv"),
            method="prompt",
            method_config={"prompt_length": 5},
        )
    )
    job = bench.get_job(job_id)
    assert job["name"] == "prompt len=5 · tiny"
    stored = {d["name"]: d["path"] for d in bench.list_datasets()}
    assert job["config"]["data"] == stored["tiny"]
    assert job["config"]["eval_data"] == stored["medium"]
    assert job["config"]["label_column"] == "label"  # resolved, so the job is reproducible
    assert job["artifact_dir"].endswith(f"job-{job_id}")


def count_opens(monkeypatch: pytest.MonkeyPatch) -> Counter[Path]:
    """Every ``Path.open`` from now on, by resolved path (``read_bytes`` opens through it)."""
    opens: Counter[Path] = Counter()
    real_open = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        opens[self.resolve()] += 1
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    return opens


def test_each_file_is_read_once_per_register_and_submit(
    bench: Workbench, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    train, dev = tmp_path / "reviews.csv", tmp_path / "dev.csv"
    train.write_bytes((data_dir / "tiny.csv").read_bytes())
    dev.write_bytes((data_dir / "medium.csv").read_bytes())
    opens = count_opens(monkeypatch)
    bench.register_dataset(train)
    assert opens[train.resolve()] == 1  # checked, hashed and counted from one read
    opens.clear()
    bench.submit(quick_job(train, eval_data=str(dev)))
    assert opens[train.resolve()] == 1 and opens[dev.resolve()] == 1


def test_a_registered_row_stores_what_the_one_read_found(bench: Workbench, tmp_path: Path) -> None:
    gaps = tmp_path / "gaps.csv"
    rows = [("good", "b"), ("", "a"), ("fine", "a"), ("ok", "b"), ("nice", "a"), ("meh", "b")]
    pd.DataFrame(rows, columns=["text", "label"]).assign(id=range(6)).to_csv(gaps, index=False)
    stored = bench.register_dataset(gaps)
    assert stored["rows"] == 6 and stored["invalid_rows"] == 1
    assert stored["columns"] == ["text", "label", "id"]
    assert stored["label_counts"] == {"a": 2, "b": 3}
    assert stored["mapping"] == {"text": "text", "text_pair": None, "label": "label"}
    assert stored["sha256"] == hashlib.sha256(gaps.read_bytes()).hexdigest()
    assert Path(stored["path"]).read_bytes() == gaps.read_bytes()


def test_catalogue(bench: Workbench) -> None:
    methods = {m["key"]: m for m in bench.list_methods()}
    assert list(methods)[:3] == ["probe", "full", "lora"]
    rank = next(f for f in methods["lora"]["fields"] if f["name"] == "rank")
    assert rank["type"] == "int" and rank["default"] == 8 and rank["min"] == 1
    sweep = next(f for f in methods["probe"]["fields"] if f["name"] == "sweep_layers")
    assert sweep["type"] == "bool"
    targets = next(f for f in methods["lora"]["fields"] if f["name"] == "targets")
    assert targets["type"] == "str" and "all linear" in targets["choices"]
    counted = bench.count_parameters("all-MiniLM-L6-v2", "lora", {"rank": 8})
    assert counted["trainable"] == 74498 and counted["text"].startswith("Trainable parameters:")
    assert bench.list_models()[0] == "all-MiniLM-L6-v2"
    assert bench.device_info()["device"] in ("cpu", "cuda")


def test_the_job_list_is_shared_briefly_and_fresh_after_this_process_writes(
    settings: Settings, data_dir: Path
) -> None:
    """The app's cache of /jobs: another process's job shows once the cache ages (here: never,
    60 s), this process's own submit at once; with the cache off, everything at once."""
    cached = Workbench(settings.with_(jobs_cache_seconds=60.0))
    other = Workbench(settings)  # another process, as far as the first one's cache can tell
    first = cached.submit(quick_job(data_dir / "tiny.csv"))
    assert [j["id"] for j in cached.list_jobs()] == [first]
    elsewhere = other.submit(quick_job(data_dir / "tiny.csv"))
    assert [j["id"] for j in cached.list_jobs()] == [first]  # served from memory
    assert [j["id"] for j in other.list_jobs()] == [elsewhere, first]  # cache off: fresh
    rows = cached.list_jobs()
    rows[0]["name"] = "changed by a caller"  # a caller's copy, not the cache
    assert cached.list_jobs()[0]["name"] != "changed by a caller"
    mine = cached.submit(quick_job(data_dir / "tiny.csv"))
    assert [j["id"] for j in cached.list_jobs()] == [mine, elsewhere, first]


def test_more_seeds_queue_the_same_settings_with_unused_seeds_and_compare_pools_them(
    bench: Workbench, data_dir: Path
) -> None:
    """Issue 37: "repeat with more seeds", then runs that differ only in seed are one pooled row."""
    from jobs import views
    from jobs.schema import Job

    first = bench.submit(quick_job(data_dir / "tiny.csv", seed=1))
    added = bench.repeat_with_seeds(first, 2)
    more = bench.repeat_with_seeds(added[0], 1)  # from any member: the group's seeds are skipped
    seeds = {job_id: bench.get_job(job_id, log_tail=0)["config"]["seed"] for job_id in (first, *added, *more)}
    assert seeds == {first: 1, added[0]: 0, added[1]: 2, more[0]: 3}
    with pytest.raises(ConfigError, match="ask for 1 to 10"):
        bench.repeat_with_seeds(first, 11)
    with bench.db.read() as session:
        jobs = [session.get(Job, job_id) for job_id in seeds]
        for job, accuracy in zip(jobs, (0.8, 0.9, 0.7, 0.6), strict=True):
            job.status, job.accuracy, job.macro_f1 = "succeeded", accuracy, accuracy - 0.1
        other = Job(**{c: getattr(jobs[0], c) for c in ("name", "method", "model", "quant", "dataset_id")})
        other.config = {**jobs[0].config, "max_length": 99}  # another setting: not pooled with them
        other.status, other.accuracy = "succeeded", 0.5
        (pooled,) = views.pooled_seeds([*jobs, other])
        # issue 46: every task pools, on its score and its own metrics (a score run has no accuracy)
        for job, rho in zip(jobs, (0.5, 0.7, 0.6, 0.8), strict=True):
            job.task, job.score, job.accuracy, job.macro_f1 = "regression", rho, None, None
            job.summary = {"primary_metric": "spearman", "spearman": rho, "pearson": rho - 0.1, "rmse": 1.0}
        (scores,) = views.pooled_seeds(jobs)
    assert pooled["n"] == 4 and sorted(pooled["seeds"]) == [0, 1, 2, 3]
    assert pooled["accuracy"] == pytest.approx(0.75) and pooled["score"] == pytest.approx(0.75)
    assert pooled["accuracy_sd"] == pytest.approx(0.1291, abs=1e-4)  # sd of 0.8, 0.9, 0.7, 0.6
    assert pooled["macro_f1"] == pytest.approx(0.65)
    assert (scores["task"], scores["primary_metric"], scores["n"]) == ("regression", "spearman", 4)
    assert scores["score"] == pytest.approx(0.65) and scores["spearman"] == pytest.approx(0.65)
    assert scores["pearson"] == pytest.approx(0.55) and scores["rmse"] == 1.0 and scores["rmse_sd"] == 0.0
    assert scores["mae"] is None and "accuracy" not in scores
