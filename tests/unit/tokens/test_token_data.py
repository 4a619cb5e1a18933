"""Token data (issue 38): every input format gives the same sentences, tag schemes are detected
and IOB1 repaired, labels sit on first sub-words, the metrics are seqeval's, the score's unit
is the sentence, and each bad input is one clear error that stores nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from app import main as cli_main
from backend.data.batching import Encoded
from backend.data.prepare import prepare
from backend.errors import DataError
from backend.tasks import registry
from backend.tasks import tag_schemes as ts
from backend.tasks.token_scores import SentenceCounts, counts_metric
from tests.tiny_models import TINY_BERT
from tests.token_data import sentences, write_conll, write_jsonl

ROWS = sentences(30, 4)
TASK = registry.get("token-classification")


def sentences_of(path: Path, **options: Any) -> list[tuple[str, list[str]]]:
    data = prepare(path, **options)
    assert data.task is TASK
    both = [*zip(data.train.rows, data.train.texts, data.train.labels, strict=True),
            *zip(data.eval.rows, data.eval.texts, data.eval.labels, strict=True)]  # fmt: skip
    return [(text, [data.label_names[t] for t in tags]) for _, text, tags in sorted(both)]


def test_jsonl_parquet_conll_and_chosen_columns_read_the_same_sentences(tmp_path: Path) -> None:
    want = [(" ".join(w), t) for w, t in ROWS]
    assert sentences_of(write_jsonl(tmp_path / "a.jsonl", ROWS)) == want
    assert sentences_of(write_conll(tmp_path / "a.conll", ROWS)) == want  # -DOCSTART- skipped
    spaced = tmp_path / "a.iob"
    spaced.write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in zip(*row, strict=True)) for row in ROWS))
    assert sentences_of(spaced) == want
    pd.DataFrame({"words": [w for w, _ in ROWS], "ner": [t for _, t in ROWS]}).to_parquet(
        tmp_path / "a.parquet"
    )
    assert sentences_of(tmp_path / "a.parquet", text_column="words", label_column="ner") == want
    named = write_jsonl(tmp_path / "b.jsonl", ROWS, words="words", tags="labels")
    assert sentences_of(named) == want


def test_conllu_reads_upos_xpos_or_a_misc_field(tmp_path: Path, capsys: Any) -> None:
    lines = []
    for i in range(12):
        lines += [f"# sent_id = {i}", "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",  # a range: left out
                  "1\tdo\tdo\tAUX\tVBP\t_\t3\taux\t_\tNER=O", "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\tNER=O",
                  f"3\t{'Paris' if i % 2 else 'go'}\tx\t{'PROPN' if i % 2 else 'VERB'}\tNNP\t_\t0\troot\t_\t"
                  f"NER={'B-LOC' if i % 2 else 'O'}", ""]  # fmt: skip
    path = tmp_path / "ud.conllu"
    path.write_text("\n".join(lines))
    upos = sentences_of(path)
    assert upos[1] == ("do n't Paris", ["AUX", "PART", "PROPN"])
    assert sentences_of(path, label_column="xpos")[0][1] == ["VBP", "RB", "NNP"]
    assert sentences_of(path, label_column="NER")[1][1] == ["O", "O", "B-LOC"]
    argv = [
        "train",
        "--data",
        str(path),
        "--tag-field",
        "nope",
        "--method",
        "lora",
        "--out",
        str(tmp_path / "x"),
    ]
    code = cli_main(argv)
    assert code == 2 and not (tmp_path / "x").exists()
    assert "ud.conllu: tag_field='nope' is not a column; columns found: 'tokens', 'upos', 'xpos', 'NER'" in (
        capsys.readouterr().err
    )
    argv += ["--tags-column", "upos"]  # two names for the label column
    assert cli_main(argv) == 2 and "not several" in capsys.readouterr().err


def test_span_jsonl_becomes_words_and_iob2_and_counts_spans_off_word_boundaries(tmp_path: Path) -> None:
    names = ("Ada Lovelace", "Bob", "Mary Smith", "Sam") * 3
    doccano = [
        {"text": f"{n} lives in Paris now", "label": [[0, len(n), "PER"], [len(n) + 10, len(n) + 15, "LOC"]]}
        for n in names
    ]
    doccano[0]["label"].append([1, 3, "PER"])  # inside a word: left out, counted
    data = prepare(write_jsonl_rows(tmp_path / "d.jsonl", doccano))
    assert any("1 span(s) do not start and end on a word boundary" in w for w in data.warnings)
    tags = {
        t: [data.label_names[i] for i in tags]
        for t, tags in zip(data.train.texts, data.train.labels, strict=True)
    }
    assert tags["Ada Lovelace lives in Paris now"] == ["B-PER", "I-PER", "O", "O", "B-LOC", "O"]
    rome = {"value": {"start": 0, "end": 4, "labels": ["LOC"]}}
    studio = [
        {"data": {"text": "Rome is big"}, "annotations": [{"result": [rome]}]},
        {"data": {"text": "Bob is big"}, "annotations": [{"result": []}]},
    ] * 4
    data = prepare(write_jsonl_rows(tmp_path / "ls.jsonl", studio))
    assert data.label_names == ["O", "B-LOC"]


def write_jsonl_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_schemes_are_detected_iob1_is_repaired_and_ill_formed_sentences_are_counted(tmp_path: Path) -> None:
    assert ts.detect([["B-PER", "I-PER", "O"]]) == ts.IOB2
    assert ts.detect([["I-PER", "I-PER", "O", "I-LOC"]]) == ts.IOB1
    assert ts.detect([["S-PER", "O", "B-LOC", "E-LOC"]]) == ts.IOBES
    assert ts.detect([["NOUN", "VERB"]]) == ts.PLAIN
    assert ts.to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"]) == ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    iob1 = [(w, [t.replace("B-", "I-") for t in tags]) for w, tags in ROWS]
    data = prepare(write_jsonl(tmp_path / "iob1.jsonl", iob1))
    assert any("IOB1" in w and "converted to IOB2" in w for w in data.warnings)
    assert set(data.label_names) == {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}
    stray = [*ROWS[:20], (["x", "Paris"], ["O", "I-LOC"]), *ROWS[20:]]  # one stray I-: IOB2 still
    data = prepare(write_jsonl(tmp_path / "stray.jsonl", stray))
    assert any("1 sentence(s) have ill-formed IOB2 tags" in w for w in data.warnings)


def test_a_word_s_tag_sits_on_its_first_sub_word_only() -> None:
    from transformers import AutoTokenizer

    from backend.catalogue import model_info
    from backend.data.prepare import Split

    tok = AutoTokenizer.from_pretrained(model_info(TINY_BERT).path)
    split = Split(["unbelievably Lovelace x"], None, [[1, 2, 0]], [1])
    row = Encoded(tok, split, 32, TASK).features[0]
    first = {}
    for position, word in enumerate(
        tok(["unbelievably", "Lovelace", "x"], is_split_into_words=True).word_ids()
    ):
        if word is not None and word not in first:
            first[word] = position
    want = [-100] * len(row["input_ids"])
    for word, position in first.items():
        want[position] = [1, 2, 0][word]
    assert row["labels"] == want and want.count(-100) > 2  # special tokens and later sub-words


def test_metrics_are_seqevals_and_the_sentence_is_the_unit() -> None:
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    names = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-LOC", "I-LOC"], ["B-PER"]]
    predicted = [["B-PER", "I-PER", "O", "O"], ["O", "I-LOC", "I-LOC"], ["B-PER"]]  # a stray I-: no entity
    ids = {n: i for i, n in enumerate(names)}
    true = TASK.truth([[ids[t] for t in s] for s in gold])
    outputs = TASK.stack([np.eye(5)[[ids[t] for t in s]] for s in predicted], [list(s) for s in gold])
    m = TASK.metrics(true, outputs, names)
    want = f1_score(gold, predicted, mode="strict", scheme=IOB2)
    assert m["entity_f1"] == pytest.approx(want) == pytest.approx(m["score"])
    assert m["token_accuracy"] == pytest.approx(6 / 8) and set(m["per_entity"]) == {"PER", "LOC"}
    counts = SentenceCounts.of(gold, predicted, ts.IOB2)
    assert float(counts_metric(counts.true, counts.predicted)) == pytest.approx(want)
    assert TASK.baseline([[0, 3]], [[ids[t] for t in s] for s in gold], names)["score"] == 0.0
    pos = ["NOUN", "VERB"]
    plain = TASK.metrics(TASK.truth([[0, 1]]), TASK.stack([np.eye(2)[[0, 0]]], [[0, 1]]), pos)
    assert plain["score"] == plain["token_accuracy"] == 0.5 and plain["entity_f1"] is None


@pytest.mark.parametrize(
    ("rows", "options", "message"),
    [
        ([{"tokens": ["a", "b"], "tags": ["O"]}] * 4, {}, "row 1 has 2 words in 'tokens' but 1 tags"),
        ([{"tokens": [], "tags": []}] * 4, {}, "row 1 is an empty sentence"),
        ([{"tokens": ["a", "b"], "tags": "O O"}] * 4, {}, "holds str 'O O' where a list of tags"),
        ([{"text": "abc", "label": [[0, 9, "PER"]]}] * 4, {}, "span 0-9 ('PER') is past the end of its text"),
        ([{"tokens": ["a"], "tags": ["O"]}, {"tokens": ["b"], "tags": ["B-X"]}] * 3, {"task": "regression"},
         "holds a tag per word (token data), which the task 'regression' cannot train on"),
    ],
)  # fmt: skip
def test_bad_token_input_is_one_clear_error(tmp_path: Path, rows: list[Any], options: dict[str, Any],
                                            message: str) -> None:  # fmt: skip
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        prepare(write_jsonl_rows(tmp_path / "bad.jsonl", rows), **options)


def test_a_conll_line_with_another_field_count_names_its_line(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "bad.conll"
    path.write_text("Paris\tB-LOC\nis\tO\n\nRome\tNNP\tB-LOC\n")
    out = tmp_path / "run"
    assert cli_main(["train", "--data", str(path), "--method", "lora", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error == ("error: bad.conll: line 4 has 3 columns where 2 were expected (line 1 has 2): "
                     "'Rome\\tNNP\\tB-LOC'. Every word line needs the same fields.")  # fmt: skip
    assert not out.exists()


def test_the_cli_trains_named_columns_and_predict_writes_tags_and_spans(tmp_path: Path, capsys: Any) -> None:
    data = write_jsonl(tmp_path / "train.jsonl", sentences(60, 5), words="words", tags="ner")
    argv = ["train", "--data", str(data), "--tokens-column", "words", "--tags-column", "ner",
            "--task", "token-classification", "--model", TINY_BERT, "--method", "lora", "--epochs", "2",
            "--lr", "default", "--max-length", "32", "--out", str(tmp_path / "run")]  # fmt: skip
    assert cli_main(argv) in (0, None)
    run = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (run["task"], run["primary_metric"]) == ("token-classification", "entity_f1")
    keys = {
        "entity_f1",
        "entity_precision",
        "entity_recall",
        "entity_macro_f1",
        "token_accuracy",
        "per_entity",
    }
    assert keys <= set(run) and run["score"] == pytest.approx(run["entity_f1"])
    raw = tmp_path / "raw.csv"
    raw.write_text('text\n"I met Ada Lovelace in Rome."\n')
    out = tmp_path / "tags.csv"
    argv = ["predict", "--artifact", str(tmp_path / "run"), "--data", str(raw), "--text-column", "text",
            "--out", str(out)]  # fmt: skip
    assert cli_main(argv) in (0, None)
    written = pd.read_csv(out)
    assert list(written.columns) == ["text", "predicted_tags", "entities"]
    assert len(written["predicted_tags"][0].split(" ")) == 7  # I met Ada Lovelace in Rome .
    assert all(e["end"] <= 7 for e in json.loads(written["entities"][0]))


def test_a_token_file_s_dataset_record_counts_words_per_tag(tmp_path: Path) -> None:
    data = prepare(write_conll(tmp_path / "a.conll", ROWS))
    words = sum(len(w) for w, _ in ROWS)
    assert sum(data.spec.label_counts.values()) == words
    assert set(data.spec.label_counts) == {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}


def test_the_search_judges_tags_by_a_loss_balanced_over_tags() -> None:
    """The rows' mean of ``search_losses`` is the mean over tags of each tag's mean cross-entropy,
    so predicting the prior ("O" everywhere) does not win a short learning-rate search."""
    targets = [[0, 0, 0, 1], [0, 0], [0, 1, 0]]  # tag ids: 0 "O", 1 "B-PER"
    rng = np.random.default_rng(0)
    probs = [rng.dirichlet([1.0, 1.0], size=len(t)) for t in targets]
    true, outputs = TASK.truth(targets), TASK.stack(probs, targets)
    ce = {0: [], 1: []}
    for tags, p in zip(targets, probs, strict=True):
        for tag, row in zip(tags, p, strict=True):
            ce[tag].append(-np.log(row[tag]))
    balanced = np.mean([np.mean(ce[0]), np.mean(ce[1])])
    assert TASK.search_losses(true, outputs).mean() == pytest.approx(balanced)
    targets = [[0] * 9 + [1], [0] * 10, [0] * 8 + [1]]  # mostly "O", as real tags are
    true = TASK.truth(targets)
    all_o = TASK.stack([np.tile([0.95, 0.05], (len(t), 1)) for t in targets], targets)
    found = TASK.stack([np.where(np.eye(2)[t] > 0, 0.7, 0.3) for t in targets], targets)
    assert (
        TASK.row_losses(true, all_o).mean() < TASK.row_losses(true, found).mean()
    )  # plain CE: the prior wins
    assert TASK.search_losses(true, all_o).mean() > TASK.search_losses(true, found).mean()
