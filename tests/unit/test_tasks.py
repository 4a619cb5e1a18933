"""The task contract (backend/tasks/base.py) and its registry, across the tasks (issue 46)."""

from __future__ import annotations

import numpy as np
import pytest

from backend.tasks import registry


def test_a_task_key_registered_twice_fails_at_registration() -> None:
    from backend.tasks.regression import Regression

    before = registry.keys()
    with pytest.raises(RuntimeError, match="task 'regression' registered twice"):
        registry.register(Regression())
    assert registry.keys() == before


@pytest.mark.parametrize("left", [False, True])
def test_each_task_types_and_pads_its_own_labels(left: bool) -> None:
    """``Task.collate``: scores as floats (MSE), class ids as longs, a tag per token padded on the
    tokenizer's side with the ignore index."""
    import torch

    inputs = {"input_ids": torch.zeros((2, 4), dtype=torch.long)}
    score = registry.get("regression").collate(dict(inputs), [{}, {}], [0.5, 4.0], left)
    assert score["labels"].dtype == torch.float and score["labels"].tolist() == [0.5, 4.0]
    label = registry.get("classification").collate(dict(inputs), [{}, {}], [1, 0], left)
    assert label["labels"].dtype == torch.long and label["labels"].tolist() == [1, 0]
    rows = [{"labels": [-100, 3, -100]}, {"labels": [2]}]
    tags = registry.get("token-classification").collate(dict(inputs), rows, [[3], [2]], left)
    expected = (
        [[-100, -100, 3, -100], [-100, -100, -100, 2]]
        if left
        else [[-100, 3, -100, -100], [2, -100, -100, -100]]
    )
    assert tags["labels"].tolist() == expected


def test_outputs_agree_only_with_the_same_predictions_and_the_same_shape() -> None:
    task = registry.get("classification")
    want = np.array([[0.6, 0.4], [0.2, 0.8]])
    same = task.same_outputs(want + 1e-7, want, 1e-5)
    assert same["ok"] and same["labels_identical"] and same["max_abs_diff"] < 1e-6
    flipped = task.same_outputs(np.array([[0.4, 0.6], [0.2, 0.8]]), want, 1.0)
    assert not flipped["labels_identical"] and not flipped["ok"]
    drift = task.same_outputs(want + 1e-3, want, 1e-5)
    assert drift["labels_identical"] and not drift["ok"] and drift["max_abs_diff"] == pytest.approx(1e-3)
    # per-word outputs: a sentence's end (NaN) in another place is not the same output
    words = np.array([[[0.9, 0.1], [np.nan, np.nan]]])
    moved = task.same_outputs(np.array([[[0.9, 0.1], [0.5, 0.5]]]), words, 1.0)
    assert moved["max_abs_diff"] == float("inf") and not moved["ok"]
    assert not task.same_outputs(want[:1], want, 1.0)["ok"]


def test_each_task_filters_and_sorts_its_own_error_rows() -> None:
    """Error analysis's rows come from the task (issue 46): labels by confidence, numbers by the
    size of their error ("wrong": off by more than the RMSE), sentences by their errors."""
    import pandas as pd

    labels = pd.DataFrame({"true": ["a", "b", "a"], "predicted": ["a", "a", "b"],
                           "correct": [True, False, False], "confidence": [0.9, 0.6, 0.7]})  # fmt: skip
    label_task = registry.get("classification")
    assert label_task.view_kind == "label"
    wrong = label_task.error_rows(labels, True, None, None, "confidence_asc")
    assert wrong["confidence"].tolist() == [0.6, 0.7]
    assert label_task.error_rows(labels, False, "a", "b", "row")["confidence"].tolist() == [0.7]
    scores = pd.DataFrame({"error": [0.1, -2.0, 0.5, 1.0]})  # RMSE 1.13: only -2.0 is off by more
    score_task = registry.get("regression")
    assert score_task.view_kind == "score" and score_task.predicts == "a number"
    largest = score_task.error_rows(scores, False, None, None, "confidence_desc")
    assert largest["error"].tolist() == [-2.0, 1.0, 0.5, 0.1]
    assert score_task.error_rows(scores, True, None, None, "row")["error"].tolist() == [-2.0]
    sentences = pd.DataFrame({"errors": [0, 3, 1]})
    tag_task = registry.get("token-classification")
    assert tag_task.view_kind == "tags"
    assert tag_task.error_rows(sentences, True, None, None, "confidence_desc")["errors"].tolist() == [3, 1]


def test_each_task_gives_its_own_table_per_output() -> None:
    """``Task.per_output``: the table Compare's per-class chart and the job row read, from an
    evaluation's metrics (classes; entity types for a tag per word; none for a score)."""
    labels, tags = registry.get("classification"), registry.get("token-classification")
    y = np.array([0, 1, 1, 0])
    best = labels.metrics(y, np.eye(2)[[0, 1, 0, 0]], ["neg", "pos"])
    assert set(labels.per_output(best)) == {"neg", "pos"}
    assert labels.per_output(best)["pos"]["recall"] == pytest.approx(0.5)
    entity = {"per_entity": {"PER": {"f1": 0.5}}, "per_class": {"O": {"f1": 1.0}}}
    assert tags.per_output(entity) == {"PER": {"f1": 0.5}}  # its own table, not another's
    assert registry.get("regression").per_output({"spearman": 0.3}) == {}


def test_a_file_is_read_by_the_first_task_whose_kind_of_cells_it_holds() -> None:
    """``registry.reader``: lists of words and tags are the token task's to read; texts with a
    label cell are read alike by every task that trains on them (1, "1" and 1.0: one label)."""
    from backend.errors import DataError
    from backend.tasks.base import Cells

    tokens = registry.reader([["I", "met", "Bob"]], [["O", "O", "B-PER"]])
    assert tokens.key == "token-classification" and tokens.cells == "a tag per word (token data)"
    read = tokens.read_cells(
        Cells([["I", "met", "Bob"]], None, [["O", "O", "B-PER"]], [1], "ner.jsonl", "w", "t")
    )
    assert read == (["I met Bob"], None, ["O O B-PER"], False)
    with pytest.raises(DataError, match="row 7 has 2 words in 'w' but 1 tags in 't'"):
        tokens.read_cells(Cells([["a", "b"]], None, [["O"]], [7], "ner.jsonl", "w", "t"))
    texts = registry.reader(["good", "bad"], [1, "1.0"])
    assert texts.cells == registry.get("classification").cells == registry.get("regression").cells
    read = texts.read_cells(Cells(["good", "bad"], ["x", "y"], [1, "1.0"], [1, 2], "a.csv", "text", "label"))
    assert read == (["good", "bad"], ["x", "y"], ["1", "1"], True)
    with pytest.raises(DataError, match="holds a tag per word \\(token data\\), which the task 'regression'"):
        registry.resolve("regression", ["O O"], False, tokens.cells, "ner.jsonl")


def test_column_roles_give_the_settings_and_the_names_that_find_columns() -> None:
    """Every task's column roles (``Task.roles``): each has its ``<key>_column`` setting with the
    role's label and help (so its flag), the mapping finds columns by the roles' names, and an
    option only one task has (a score column) implies that task."""
    import dataclasses

    from backend.data import mapping
    from backend.training.config import TrainConfig

    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for role in registry.all_roles():
        assert role.option in fields, f"{role.option}: the role {role.key!r} has no setting"
        assert (fields[role.option].metadata["label"], fields[role.option].metadata["help"]) == (
            role.label,
            role.help,
        )
    tokens = registry.get("token-classification")
    assert [r.option for r in tokens.roles] == ["tokens_column", "tags_column"]
    assert {"tokens", "words"} <= set(mapping.TEXT_NAMES) and {"tags", "score"} <= set(mapping.LABEL_NAMES)
    assert mapping.detect_columns(["words", "ner_tags"]) == mapping.ColumnMapping("words", "ner_tags")
    assert registry.resolve_key("auto", ["score_column"]) == "regression"
    assert registry.resolve_key("auto", ["tags_column"]) == "token-classification"
    assert (
        registry.resolve_key("auto", ["label_column", "text_pair_column"]) == "auto"
    )  # several tasks' roles
    assert registry.resolve_key("classification", ["score_column"]) == "classification"  # a named task wins
