"""The shareable HTML report, built from real finished runs.

A real SQLite database and supervisor run a two-point probe sweep (heads on cached
features: the cheapest real runs, with step and epoch losses, confusion matrices and a
majority baseline) on tiny data whose labels are hostile HTML, so the records the report
renders are exactly what ``Workbench.compare``/``get_job``/``get_sweep`` return, and every
label and run name has to come out as text. tests/ui/test_client.py adds a LoRA run's.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from backend.errors import ConfigError
from jobs.supervisor import Supervisor
from service.api import Workbench
from service.report import comparison_report, shareable_config
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import kill_workers, make_settings, quick_job, wait_status

HOSTILE = '<script>alert("label")</script>'
OTHER = 'pos & "fun"'
SWEEP_NAME = "<b>heads</b> & co"  # the trials are named after it
FETCHES = re.compile(r"""(src|href)\s*=\s*["']?\s*(https?:)?//|<link|<script|@import|url\(""", re.I)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A probe sweep over the head (linear, MLP), both trials succeeded."""
    root = tmp_path_factory.mktemp("report")
    settings = make_settings(root)
    rows = [(text, HOSTILE if label == "pos" else OTHER) for text, label in sentiment_rows(60)]
    data = write_csv(root / "hostile.csv", rows)
    bench = Workbench(settings)
    probe = quick_job(data, method="probe")
    sweep_id = bench.submit_sweep(probe, grid=["head=linear,mlp"], name=SWEEP_NAME)
    trials = [t["job_id"] for t in bench.get_sweep(sweep_id)["trials"]]
    supervisor = Supervisor(settings, max_concurrent=1, poll_seconds=0.2).start()
    try:
        for job_id in trials:
            job = wait_status(bench, job_id)
            assert job["status"] == "succeeded", job["error"]
    finally:
        supervisor.stop(kill_workers=True)
        kill_workers(settings)
    yield {"bench": bench, "sweep": sweep_id, "trials": trials}


def _self_contained(page: str) -> None:
    """One HTML document that fetches nothing and runs nothing; every SVG well-formed."""
    assert page.startswith("<!DOCTYPE html>") and page.count("</html>") == 1
    assert not FETCHES.search(page), FETCHES.search(page)
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert svgs
    for svg in svgs:
        ET.fromstring(svg)  # raises on a name or label that was not escaped


def test_a_comparison_report_holds_the_table_charts_and_configs(finished: dict[str, Any]) -> None:
    bench: Workbench = finished["bench"]
    ids = finished["trials"]
    path = bench.report(ids)
    assert path.parent == bench.settings.data_dir / "exports" and path.suffix == ".html"
    page = path.read_text(encoding="utf-8")
    _self_contained(page)
    compare = bench.compare(ids)
    for row in compare["table"]:
        assert f"#{row['id']} " in page
        # each score with its 95% interval (issue 37), as the run stored it
        acc, f1 = row["score_ci"], row["macro_f1_ci"]
        assert f">{row['accuracy']:.3f} [{acc[0]:.3f}, {acc[1]:.3f}] accuracy<" in page
        assert f">{row['macro_f1']:.3f} [{f1[0]:.3f}, {f1[1]:.3f}]<" in page
        config = shareable_config(bench.get_job(row["id"], log_tail=0)["config"])
        assert html.escape(json.dumps(config, indent=2, sort_keys=True)) in page
    assert "Majority class (reference)" in page and 'class="wb-curves"' in page
    # Hostile text arrives as text: in the tables, the confusion matrices and the charts.
    assert HOSTILE not in page and html.escape(HOSTILE) in page and html.escape(OTHER) in page
    assert html.escape(SWEEP_NAME) in page and SWEEP_NAME not in page
    # The stored copy of the data is named by its file name only, even for a local reader.
    assert str(bench.settings.data_dir / "datasets") not in page


def test_a_sweep_report_adds_the_sweep_and_its_pareto_charts(finished: dict[str, Any]) -> None:
    bench: Workbench = finished["bench"]
    detail = bench.get_sweep(finished["sweep"])
    page = bench.report(sweep_id=finished["sweep"]).read_text(encoding="utf-8")
    _self_contained(page)
    assert f"Sweep #{finished['sweep']}: {html.escape(SWEEP_NAME)}" in page
    assert page.count('class="wb-pareto"') == 3  # against parameters, time and size
    assert f'data-key="{detail["best_job_id"]}" class="wb-point wb-best"' in page
    assert "Click a point" not in page and "cursor:pointer" not in page  # nothing listens
    for job_id in finished["trials"]:
        assert f"#{job_id} " in page
    assert "★ best run of the sweep" in page


def test_a_redacted_report_has_no_server_path_and_a_file_of_its_own(finished: dict[str, Any]) -> None:
    from ui.exposure import redact  # what /report applies for callers from other machines

    bench: Workbench = finished["bench"]
    ids = finished["trials"]
    local, remote = bench.report(ids), bench.report(ids, redact=redact)
    assert remote != local and remote.name.endswith("-redacted.html")
    page = remote.read_text(encoding="utf-8")
    _self_contained(page)
    assert str(bench.settings.data_dir.parent) not in page
    assert all(f"#{i} " in page for i in ids)


def test_a_run_without_results_is_reported_as_such(finished: dict[str, Any]) -> None:
    """A queued run beside a finished one: dashes, no matrix, no curve, no failure."""
    bench: Workbench = finished["bench"]
    done = finished["trials"][0]
    config = bench.get_job(done, log_tail=0)["config"]
    queued = bench.submit({**config, "method": "lora", "method_config": {}})
    try:
        page = bench.report([done, queued]).read_text(encoding="utf-8")
    finally:
        bench.delete(queued)  # no supervisor runs in this module: it would only wait
    _self_contained(page)
    assert f"#{queued} " in page and "queued" in page
    assert page.count("no confusion matrix") == 1 and page.count('class="wb-curves"') == 1


def test_the_generation_time_is_in_the_title_block(finished: dict[str, Any]) -> None:
    bench: Workbench = finished["bench"]
    ids = finished["trials"]
    jobs = [bench.get_job(i, log_tail=0) for i in ids]
    when = datetime(2024, 5, 6, 7, 8, tzinfo=timezone.utc)
    page = comparison_report(bench.compare(ids), jobs, generated=when)
    assert "Generated 2024-05-06 07:08 UTC" in page and "2 runs" in page
    assert f"<title>Comparison of runs #{ids[0]}, #{ids[1]}</title>" in page


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "pick at least one run (or a sweep) to report on"),
        ({"job_ids": []}, "pick at least one run (or a sweep) to report on"),
        ({"job_ids": [1], "sweep_id": 1}, "either runs (job ids) or one sweep, not both"),
        ({"job_ids": [987]}, "no job 987"),
        ({"sweep_id": 654}, "no sweep 654"),
    ],
)
def test_bad_requests_are_config_errors(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    bench = Workbench(make_settings(tmp_path))
    with pytest.raises(ConfigError, match=re.escape(message)):
        bench.report(**kwargs)
    assert not (bench.settings.data_dir / "exports").exists() or not any(
        (bench.settings.data_dir / "exports").iterdir()
    )
