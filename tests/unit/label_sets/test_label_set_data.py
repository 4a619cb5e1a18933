"""The multi-label task (issue 46) without a model: how files of label sets are read (a separator,
lists, 0/1 columns; detected or named), the errors for bad input, the metrics against
scikit-learn, the baseline, the threshold "auto" chooses, and the paired test on micro-F1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score, hamming_loss

from backend.data.prepare import prepare
from backend.errors import ConfigError, DataError
from backend.significance import compare_runs
from backend.tasks import label_sets as ls
from backend.tasks import registry
from tests.conftest import SHARED_DATA
from tests.label_set_data import LABELS, label_sets, write_binary, write_joined, write_lists

TASK = registry.get("multi-label")
GOEMOTIONS = SHARED_DATA / "goemotions"


def sets_of(split: object, names: list[str]) -> list[list[str]]:
    return [[names[i] for i, v in enumerate(row) if v] for row in split.labels]  # type: ignore[attr-defined]


@pytest.mark.parametrize("sep", [";", "|", ","])
def test_names_joined_by_a_separator_are_detected_and_read_as_sets(tmp_path: Path, sep: str) -> None:
    rows = label_sets(60, 1)
    data = prepare(write_joined(tmp_path / "sets.csv", rows, sep), seed=0)
    assert data.task.key == "multi-label" and data.label_names == list(LABELS)
    read = sets_of(data.train, data.label_names) + sets_of(data.eval, data.label_names)
    assert sorted(map(tuple, read)) == sorted(tuple(labels) for _, labels in rows if labels)


def test_lists_and_binary_columns_are_read_with_their_empty_sets(tmp_path: Path) -> None:
    rows = label_sets(60, 2)
    want = sorted(tuple(labels) for _, labels in rows)
    for path in (write_lists(tmp_path / "sets.jsonl", rows), write_binary(tmp_path / "flags.csv", rows)):
        data = prepare(path, seed=0)
        assert data.task.key == "multi-label" and data.label_names == list(LABELS)
        read = sets_of(data.train, data.label_names) + sets_of(data.eval, data.label_names)
        assert sorted(map(tuple, read)) == want  # the rows without a label are kept, as empty sets
        assert () in want


def test_named_label_columns_and_separator_override_detection(tmp_path: Path) -> None:
    rows = label_sets(60, 3)
    # an id column of numbers blocks detection of the 0/1 columns: the run names them
    path = write_binary(tmp_path / "flags.csv", rows, extra={"year": "2020"})
    assert prepare(path, seed=0, task="auto", label_column="joy").task.key == "classification"
    named = prepare(path, seed=0, task="multi-label", task_config={"label_columns": "joy, fear"})
    assert named.label_names == ["fear", "joy"]
    # every row has a single name: "auto" sees classes; the named task at its separator sees sets
    single = write_joined(tmp_path / "single.csv", [(t, labels[:1]) for t, labels in rows if labels])
    assert prepare(single, seed=0).task.key == "classification"
    as_sets = prepare(single, seed=0, task="multi-label")
    assert as_sets.task.key == "multi-label" and as_sets.label_names == list(LABELS)


def test_classes_with_a_comma_and_decimal_commas_are_not_label_sets() -> None:
    cities = ["Austin, TX", "Dallas, TX", "Boston, MA", "Miami, FL", "Tulsa, OK", "Paris"]
    assert ls.detect_separator(cities) is None
    assert ls.detect_separator(["2,5", "3", "4,75", "1"]) is None
    prose = ["I came home, and then we went out for a long walk by the river", "joy"]
    assert ls.detect_separator(prose) is None
    assert ls.detect_separator(["joy;love", "joy", "anger"]) == ";"
    assert ls.detect_separator(["a|b", "b|c", "a|c", "c|a"]) == "|"  # every row two labels: they recur


@pytest.mark.parametrize(
    ("rows", "flags", "message"),
    [
        (
            "text,joy,fear\nhi,1,0\nho,2,1\n",
            {"label_columns": "joy,fear"},
            "the label column 'joy' holds '2' in row 2",
        ),
        (
            "text,joy,fear\nhi,1,0\n",
            {"label_columns": "joy,anger"},
            "name 'anger', which the file does not have",
        ),
        (
            '{"text": "a", "labels": []}\n{"text": "b", "labels": []}\n',
            {},
            "no row of column 'labels' has any label",
        ),
        (
            "text,labels\na,joy;;fear\nb,joy\n",
            {},
            "row 1, column 'labels'.*empty label name next to the separator",
        ),
        ("text,labels\na,joy;\nb,fear;joy\nc,fear\n", {}, "row 1.*'joy;' has an empty label name"),
    ],
)
def test_bad_label_sets_are_one_clear_error(
    tmp_path: Path, rows: str, flags: dict[str, str], message: str
) -> None:
    path = tmp_path / ("bad.jsonl" if rows.startswith("{") else "bad.csv")
    path.write_text(rows)
    with pytest.raises(DataError, match=message):
        prepare(path, seed=0, task="multi-label", task_config=flags)


def test_a_label_only_in_the_evaluation_file_is_refused(tmp_path: Path) -> None:
    train = write_joined(tmp_path / "train.csv", label_sets(40, 4))
    evaluation = tmp_path / "eval.csv"
    evaluation.write_text("text,labels\nhappy day,joy\nso calm,calm;joy\n")
    with pytest.raises(DataError, match=r"only in the evaluation file.*calm"):
        prepare(train, evaluation, seed=0)


def test_settings_are_checked() -> None:
    assert TASK.configured({"threshold": "0.35"}).cut == pytest.approx(0.35)
    assert TASK.configured({"threshold": 0.4}).settings_dict()["threshold"] == "0.4"
    for bad in ("1.5", "high", 0, True):
        with pytest.raises(ConfigError, match="Threshold must be 'auto' or a number between 0 and 1"):
            TASK.configured({"threshold": bad})
    with pytest.raises(ConfigError, match="Label separator must be one of"):
        TASK.configured({"label_separator": "/"})


def test_metrics_are_scikit_learns_and_the_baseline_is_the_most_frequent_set() -> None:
    rng = np.random.default_rng(0)
    true = (rng.random((300, 4)) < 0.3).astype(float)
    probs = true * 0.4 + rng.random((300, 4)) * 0.6
    task = TASK.configured({"threshold": 0.5})
    m = task.metrics(true, probs, ["a", "b", "c", "d"])
    predicted = (probs >= 0.5).astype(int)
    assert m["micro_f1"] == pytest.approx(f1_score(true, predicted, average="micro"))
    assert m["macro_f1"] == pytest.approx(f1_score(true, predicted, average="macro"))
    assert m["samples_f1"] == pytest.approx(f1_score(true, predicted, average="samples", zero_division=1))
    assert m["hamming_loss"] == pytest.approx(hamming_loss(true, predicted))
    assert m["subset_accuracy"] == pytest.approx(np.mean((true == predicted).all(1)))
    assert m["score"] == m["micro_f1"] == pytest.approx(task.score(true, probs))
    assert set(m["per_label"]) == {"a", "b", "c", "d"} and m["threshold"] == 0.5
    low, high = task.intervals(true, probs, ["a", "b", "c", "d"])["score_ci"]
    assert low < m["micro_f1"] < high

    train = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    baseline = TASK.baseline(train, [[1.0, 0.0], [0.0, 1.0]], ["joy", "fear"])
    assert baseline["label_set"] == ["joy"] and baseline["subset_accuracy"] == 0.5
    assert baseline["score"] == pytest.approx(2 * 1 / (2 + 2))  # 1 right of 2 predicted, 2 gold


def test_auto_chooses_the_threshold_with_the_best_micro_f1_on_the_held_out_rows() -> None:
    true = np.array([[1, 0], [0, 1], [1, 1], [0, 0]] * 10, dtype=float)
    probs = np.where(true > 0, 0.32, 0.2)  # every label right from 0.25 to 0.3 only
    chosen = TASK.choose_settings(true, probs, ["a", "b"])
    assert chosen.settings.threshold == "0.3" and chosen.score(true, probs) == 1.0
    assert TASK.score(true, probs) == 0.0  # at 0.5 before the choice: nothing chosen
    assert TASK.holdout_rows(3000) == 300 and TASK.configured({"threshold": 0.5}).holdout_rows(3000) == 0


def test_compare_pairs_runs_on_micro_f1_by_permutation() -> None:
    import pandas as pd

    rng = np.random.default_rng(1)
    gold = [ls.as_cell(list(rng.choice(LABELS, size=rng.integers(1, 3), replace=False))) for _ in range(200)]
    good = list(gold)
    bad = [ls.as_cell(["joy"]) for _ in gold]
    frames = [
        (
            name,
            pd.DataFrame(
                {"row": range(200), "text": [f"t{i}" for i in range(200)], "true": gold, "predicted": p}
            ),
        )
        for name, p in (("good", good), ("bad", bad))
    ]
    result = compare_runs(frames, TASK.scoring)
    assert result["metric"] == "micro_f1" and result["best"] == "good"
    (pair,) = result["pairs"]
    assert pair["test"] == "paired permutation" and pair["verdict"] == "worse"
    scores = {r["run"]: r["score"] for r in result["runs"]}
    assert scores["good"] == 1.0 and scores["bad"] == pytest.approx(TASK.score(
        np.array([[n in ls.of_cell(c) for n in LABELS] for c in gold]),
        np.array([[n == "joy" for n in LABELS] for _ in gold], dtype=float),
    ))  # fmt: skip


@pytest.mark.skipif(not GOEMOTIONS.is_dir(), reason="../shared/data/goemotions is absent")
def test_goemotions_is_read_as_28_labels_from_its_csv_and_its_jsonl() -> None:
    """The real data: the CSV joins names by ";", the JSONL holds lists; both read the same sets."""
    csv_data = prepare(GOEMOTIONS / "dev.csv", seed=0, text_column="text")
    assert csv_data.task.key == "multi-label" and len(csv_data.label_names) == 28
    names = (GOEMOTIONS / "labels.txt").read_text().split()
    assert sorted(names) == csv_data.label_names
    jsonl = prepare(GOEMOTIONS / "dev.jsonl", seed=0, text_column="text")
    assert jsonl.label_names == csv_data.label_names
    rows = csv_data.train.labels + csv_data.eval.labels
    several = np.mean([sum(r) >= 2 for r in rows])
    assert 0.15 < several < 0.18  # 16.2% of dev rows have two or more (PROVENANCE.md)
    assert sorted(map(json.dumps, jsonl.train.labels + jsonl.eval.labels)) == sorted(map(json.dumps, rows))
