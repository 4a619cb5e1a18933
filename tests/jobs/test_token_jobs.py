"""Token classification as jobs (issue 38): real workers train a CoNLL upload, the job row
carries the task and entity F1, Compare pairs two runs sentence by sentence and charts their
per-entity F1, error analysis lists sentences by their entity errors with gold and predicted
spans, calibration is refused, Try it splits a typed sentence into words and tags them, and a
run evaluates on another token file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from backend.errors import ConfigError
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import quick_job, wait_status
from tests.token_data import sentences, write_conll, write_jsonl
from ui.endpoints import Endpoints
from ui.error_views import tagged_examples
from ui.tables import predictions_table
from ui.tabs import probing
from ui.tabs.errors import evaluation_note
from ui.tabs.runs import summary

# A task's flow through the jobs, not the engine: one engine (tests/jobs/conftest.py).
pytestmark = pytest.mark.engines("sqlite")


def test_token_jobs_train_compare_and_explain_their_errors(
    bench: Workbench, tmp_path: Path, supervisors: Callable[..., Supervisor]
) -> None:
    data = bench.register_dataset(write_conll(tmp_path / "train.conll", sentences(120, 1)))
    preview = bench.dataset_preview(data["id"])  # the Data tab: sentences with their tags drawn in
    assert preview["task"] == "token-classification" and preview["rows"] == 120
    assert preview["tagged"] and preview["tagged"][0]["entities"] and not preview["tagged"][0]["plain"]
    assert set(preview["label_counts"]) == {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
    evals = write_conll(tmp_path / "eval.conll", sentences(40, 2))
    config = quick_job(Path(data["path"]), eval_data=str(evals), epochs=3, max_length=32)
    sweep = {"method": "probe", "method_config": {"sweep_layers": True}, "epochs": 5}
    labels = quick_job(write_csv(tmp_path / "labels.csv", sentiment_rows(60)), **sweep)
    jobs = [bench.submit(config), bench.submit({**config, **sweep}), bench.submit(labels)]
    supervisors()
    lora, probe, sentences_sweep = (wait_status(bench, j) for j in jobs)
    statuses = [lora["status"], probe["status"], sentences_sweep["status"]]
    assert statuses == ["succeeded"] * 3, [lora["error"], probe["error"], sentences_sweep["error"]]
    # Probing by layer: the token sweep's score by layer beside the sentence task's on the same model
    frame, text, curves = probing.show(Endpoints(bench), jobs[1])
    assert len(frame) == 3 and f"Beside it: run #{jobs[2]}, classification" in text  # tiny BERT: 2 layers
    assert set(curves["task"]) == {f"#{jobs[2]} classification: accuracy",
                                   f"#{jobs[1]} token-classification: entity_f1"}  # fmt: skip
    jobs = jobs[:2]
    for job in (lora, probe):
        assert (job["task"], job["primary_metric"]) == ("token-classification", "entity_f1")
        assert job["score"] == pytest.approx(job["metrics"]["entity_f1"])

    result = bench.significance(jobs)  # sentences are the unit paired
    assert result["metric"] == "entity_f1" and result["eval_rows"] == 40
    assert result["pairs"][0]["test"] == "paired permutation"
    shown = bench.compare(jobs)
    assert set(shown["per_class_f1"][jobs[0]]) == {"PER", "LOC"}  # Compare's per-entity F1
    page = bench.report(jobs).read_text()  # the HTML report: the per-entity table, the score by name
    assert "entity_f1" in page and "<td>PER</td>" in page.replace(" ", "")
    assert f"entity_f1 {lora['score']:.3f}" in summary(lora)  # the Runs page's header

    examples = bench.predictions(jobs[0])  # the sentences with the most entity errors first
    errors = [r["errors"] for r in examples["rows"]]
    assert examples["kind"] == "tags" and examples["total"] == 40 and errors == sorted(errors, reverse=True)
    first = examples["rows"][0]
    assert {e["type"] for e in first["true_entities"]} == {"PER", "LOC"}
    drawn = tagged_examples(examples)
    assert drawn.count("<tr>") == 41 and 'class="wb-ent"' in drawn
    wrong = bench.predictions(jobs[0], wrong_only=True)
    assert all(r["errors"] > 0 for r in wrong["rows"]) and wrong["matching"] == sum(e > 0 for e in errors)
    with pytest.raises(ConfigError, match="a tag per word"):
        bench.calibration(jobs[0])

    (tagged,) = bench.predict([jobs[0]], ["I met Ada Lovelace in New York."])  # Try it
    (item,) = tagged["predictions"]
    assert item["words"] == ["I", "met", "Ada", "Lovelace", "in", "New", "York", "."]
    assert len(item["tags"]) == 8 and all(e["end"] <= 8 for e in item["entities"])
    assert tagged["view"] == "tags" and "wb-tagged" in str(predictions_table([tagged]).iloc[0]["Prediction"])
    with pytest.raises(ConfigError, match="no words"):
        bench.predict([jobs[0]], ["   "])

    other = bench.register_dataset(write_jsonl(tmp_path / "other.jsonl", sentences(30, 3)))
    evaluated = bench.evaluate(jobs[0], other["id"])
    assert evaluated["rows"] == 30 and 0.0 <= evaluated["entity_f1"] <= 1.0
    note = evaluation_note(jobs[0], evaluated, bench.get_job(jobs[0])["headline"])
    assert f"entity-f1 {evaluated['entity_f1']:.4f}" in note
    assert bench.predictions(jobs[0], dataset_id=other["id"])["kind"] == "tags"


def test_the_train_forms_task_settings_reach_the_job_of_that_task(bench: Workbench, tmp_path: Path) -> None:
    """``/launch``'s task_settings hold every task's; a job takes its own task's (with "auto",
    the task its data is), and a named task refuses another's settings with nothing queued."""
    endpoints = Endpoints(bench)
    tokens = bench.register_dataset(write_jsonl(tmp_path / "ner.jsonl", sentences(40, 3)))
    labels = bench.register_dataset(write_csv(tmp_path / "labels.csv", sentiment_rows(40)))
    chosen = {"token-classification": {"tag_scheme": "plain"}}
    token_job = endpoints.launch(tokens["id"], "lora", task_settings=chosen)
    label_job = endpoints.launch(labels["id"], "lora", task_settings=chosen)
    assert bench.get_job(token_job["id"])["config"]["task_config"] == {"tag_scheme": "plain"}
    assert bench.get_job(label_job["id"])["config"]["task_config"] == {}
    queued = len(bench.list_jobs())
    with pytest.raises(ConfigError, match="task_settings must map each task key to its settings"):
        endpoints.launch(tokens["id"], "lora", task_settings={"token-classification": "plain"})  # type: ignore[dict-item]
    named = {"classification": {"tag_scheme": "IOB2"}}
    with pytest.raises(ConfigError, match="'classification' has no setting 'tag_scheme'"):
        endpoints.launch(labels["id"], "lora", task="classification", task_settings=named)
    assert len(bench.list_jobs()) == queued


def test_the_data_tabs_pickers_are_named_by_the_datas_task(bench: Workbench, tmp_path: Path) -> None:
    """The Data tab labels its column pickers with the roles of the task the data is."""
    from ui.tabs.data import _Handlers as DataHandlers

    handlers = DataHandlers(Endpoints(bench))
    tokens = bench.register_dataset(write_jsonl(tmp_path / "ner.jsonl", sentences(20, 3)))
    labels = bench.register_dataset(write_csv(tmp_path / "labels.csv", sentiment_rows(20)))
    _, text, pair, label, *_ = handlers.show(tokens["id"])
    assert (text["label"], label["label"], text["value"], label["value"]) == (
        "Tokens column", "Tags column", "tokens", "tags",
    )  # fmt: skip
    assert pair["info"] == "Not used by token classification."
    _, text, pair, label, *_ = handlers.show(labels["id"])
    assert (text["label"], pair["label"], label["label"]) == (
        "Text column", "Second text column (optional)", "Label column",
    )  # fmt: skip
