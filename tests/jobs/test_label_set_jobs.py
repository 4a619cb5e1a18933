"""Multi-label classification as jobs (issue 46): real workers train an upload of label sets, the
job row carries the task, micro-F1 and the chosen threshold, Compare pairs two runs by a paired
permutation test on micro-F1 and charts their per-label F1, error analysis lists rows with their
missed and extra labels, calibration is refused, Try it shows every label with its probability
and marks the chosen ones, and a run evaluates on another file of label sets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from backend.errors import ConfigError
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.jobs.conftest import quick_job, wait_status
from tests.label_set_data import LABELS, label_sets, write_joined, write_lists
from ui.endpoints import Endpoints
from ui.error_views import label_set_examples
from ui.tables import predictions_table
from ui.tabs.errors import _Handlers as ErrorsTab
from ui.tabs.errors import evaluation_note
from ui.tabs.runs import summary

pytestmark = pytest.mark.engines("sqlite")  # a task's flow through the jobs, not the engine


def test_label_set_jobs_train_compare_and_explain_their_errors(
    bench: Workbench, tmp_path: Path, supervisors: Callable[..., Supervisor]
) -> None:
    data = bench.register_dataset(write_joined(tmp_path / "train.csv", label_sets(160, 1)))
    preview = bench.dataset_preview(data["id"])  # the Data tab: the task and rows per label
    assert preview["task"] == "multi-label" and set(preview["label_counts"]) == set(LABELS)
    config = quick_job(Path(data["path"]), epochs=3, max_length=16)
    jobs = [bench.submit(config), bench.submit({**config, "method": "probe", "epochs": 5})]
    supervisors()
    lora, probe = (wait_status(bench, j) for j in jobs)
    assert [lora["status"], probe["status"]] == ["succeeded"] * 2, [lora["error"], probe["error"]]
    for job in (lora, probe):
        assert (job["task"], job["primary_metric"]) == ("multi-label", "micro_f1")
        assert job["score"] == pytest.approx(job["metrics"]["micro_f1"])
        assert 0 < job["metrics"]["threshold"] < 1
        assert job["config"]["task_config"].get("threshold", "auto") == "auto"  # asked "auto"; chose it

    result = bench.significance(jobs)  # rows paired, micro-F1 by permutation
    assert result["metric"] == "micro_f1" and result["pairs"][0]["test"] == "paired permutation"
    shown = bench.compare(jobs)
    assert set(shown["per_class_f1"][jobs[0]]) == set(LABELS)  # Compare's per-label F1
    page = bench.report(jobs).read_text()
    assert "micro_f1" in page and "<td>joy</td>" in page.replace(" ", "")
    assert f"micro_f1 {lora['score']:.3f}" in summary(lora)  # the Runs page's header

    examples = bench.predictions(jobs[0], wrong_only=True)  # the most missed and extra labels first
    assert examples["kind"] == "labels" and examples["rows"]
    errors = [r["errors"] for r in examples["rows"]]
    assert errors == sorted(errors, reverse=True) and min(errors) > 0
    for row in examples["rows"]:
        assert set(row["missed"]) == set(row["true"]) - set(row["predicted"])
        assert set(row["extra"]) == set(row["predicted"]) - set(row["true"])
    joy = bench.predictions(jobs[0], true_label="joy")["rows"]
    assert joy and all("joy" in r["true"] for r in joy)
    drawn = label_set_examples(examples)
    assert drawn.count("<tr>") == len(examples["rows"]) + 1
    for kind in ("missed", "extra"):  # each row's missed and extra labels marked
        assert drawn.count(f'class="wb-{kind}"') == sum(bool(r[kind]) for r in examples["rows"])
    with pytest.raises(ConfigError, match="a set of labels per text"):
        bench.calibration(jobs[0])
    tab = ErrorsTab(Endpoints(bench)).show(jobs[0], 0, True, "", "", "confidence_desc")  # the page
    assert "micro_f1" in tab[0] and "missed and extra" in tab[0] and tab[3].count("<tr>") == len(errors) + 1

    (answer,) = bench.predict([jobs[0]], ["so happy and glad today"])  # Try it
    (item,) = answer["predictions"]
    assert answer["view"] == "labels" and [e["name"] for e in item["labels"]] != []
    assert {e["name"] for e in item["labels"]} == set(LABELS)
    threshold = lora["metrics"]["threshold"]
    assert all(e["chosen"] == (e["probability"] >= threshold) for e in item["labels"])
    assert item["label"] == ", ".join(e["name"] for e in item["labels"] if e["chosen"])
    cells = predictions_table([answer]).iloc[0]
    assert str(cells["Every label"]).count("✓") == sum(e["chosen"] for e in item["labels"])

    other = bench.register_dataset(write_lists(tmp_path / "other.jsonl", label_sets(40, 3)))
    evaluated = bench.evaluate(jobs[0], other["id"])
    assert evaluated["rows"] == 40 and 0.0 <= evaluated["micro_f1"] <= 1.0
    note = evaluation_note(jobs[0], evaluated, bench.get_job(jobs[0])["headline"])
    assert f"micro-f1 {evaluated['micro_f1']:.4f}" in note
    assert bench.predictions(jobs[0], dataset_id=other["id"])["kind"] == "labels"
