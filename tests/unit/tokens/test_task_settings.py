"""A task's own settings (issue 46), proved by the token task's tag scheme: checked like a
method's settings, carried by the CLI, stored with the run, and read back by a reload; what
the scheme changes is how the tags are read and scored."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app import main as cli_main
from backend.artifacts.load import Predictor
from backend.data.prepare import prepare
from backend.errors import ConfigError, DataError
from backend.tasks import registry
from backend.training.config import TrainConfig, validate
from service.cli_args import add_train_arguments, train_config_from_args
from tests.tiny_models import TINY_BERT
from tests.token_data import sentences, write_jsonl

TOKENS = registry.get("token-classification")
LABELS = registry.get("classification")


def iob1(rows: list[tuple[list[str], list[str]]]) -> list[tuple[list[str], list[str]]]:
    """The sentences with each entity started by I- (IOB1: B- only between two of a kind)."""
    return [(w, [t.replace("B-", "I-") for t in tags]) for w, tags in rows]


def test_settings_are_checked_as_a_methods_are() -> None:
    assert TOKENS.configured({}) is TOKENS and TOKENS.configured({"tag_scheme": "auto"}) is TOKENS
    plain = TOKENS.configured({"tag_scheme": "plain"})
    assert plain.settings.tag_scheme == "plain" and TOKENS.settings.tag_scheme == "auto"  # a copy
    assert plain.settings_dict() == {"tag_scheme": "plain"}
    with pytest.raises(
        ConfigError, match=r"Tag scheme must be one of auto, IOB2, IOB1, IOBES, plain, not 'BIO'"
    ):
        TOKENS.configured({"tag_scheme": "BIO"})
    with pytest.raises(ConfigError, match=r"no setting 'threshold' \(its settings: tag_scheme\)"):
        TOKENS.configured({"threshold": 0.5})
    with pytest.raises(
        ConfigError, match=r"the task 'classification' has no setting 'tag_scheme' \(its settings: none\)"
    ):
        LABELS.configured({"tag_scheme": "IOB2"})


def test_the_scheme_decides_how_tags_are_read_and_scored(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "iob1.jsonl", iob1(sentences(30, 1)))
    auto = prepare(path)  # most entities start with I-: read as IOB1 and made IOB2
    assert any("IOB1" in w for w in auto.warnings) and "B-PER" in auto.label_names
    kept = prepare(path, task_config={"tag_scheme": "IOB2"})  # as typed: stray I- are ill-formed
    assert "B-PER" not in kept.label_names and any("ill-formed IOB2" in w for w in kept.warnings)
    plain = prepare(path, task_config={"tag_scheme": "plain"})
    assert plain.task.primary_of(plain.label_names) == "token_accuracy"
    assert auto.task.primary_of(auto.label_names) == "entity_f1"
    # one sentence, words tagged exactly right: plain scores words, with no entity figures
    true = np.array([[plain.label_names.index(t) for t in ["O", "I-PER", "I-PER"]]])
    outputs = np.eye(len(plain.label_names))[true]
    scored = plain.task.metrics(true, outputs, plain.label_names)
    assert scored["entity_f1"] is None and scored["score"] == scored["token_accuracy"] == 1.0


def test_a_scheme_that_does_not_fit_the_tags_is_one_clear_error(tmp_path: Path) -> None:
    ioes = [(w, [t.replace("I-", "E-") for t in tags]) for w, tags in sentences(20, 2)]
    path = write_jsonl(tmp_path / "e.jsonl", ioes)
    with pytest.raises(DataError, match=r"prefix \(E-\) that IOB2 does not use; choose the tag scheme IOBES"):
        prepare(path, task_config={"tag_scheme": "IOB2"})
    pos = write_jsonl(
        tmp_path / "pos.jsonl", [(w, ["NOUN" if len(x) > 3 else "DET" for x in w]) for w, _ in ioes]
    )
    with pytest.raises(DataError, match=r"no tag has a B-/I- prefix.*choose the tag scheme 'plain'"):
        prepare(pos, task_config={"tag_scheme": "IOBES"})


def test_a_named_task_checks_its_settings_before_any_data_is_read(tiny_csv: Path) -> None:
    cfg = TrainConfig(
        data=str(tiny_csv), method="lora", task="classification", task_config={"tag_scheme": "IOB2"}
    )
    with pytest.raises(ConfigError, match="'classification' has no setting 'tag_scheme'"):
        validate(cfg)
    auto = TrainConfig(data=str(tiny_csv), method="lora", task_config={"tag_schema": "IOB2"})
    with pytest.raises(ConfigError, match="no task has the setting"):
        validate(auto)
    # "auto" on label data: the task the data turns out to be refuses it when the data is read
    with pytest.raises(ConfigError, match="'classification' has no setting 'tag_scheme'"):
        prepare(tiny_csv, task_config={"tag_scheme": "IOB2"})


def parsed(*flags: str) -> TrainConfig:
    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    return train_config_from_args(parser.parse_args(["--data", "x.csv", "--method", "lora", *flags]))


def test_the_cli_has_a_flag_per_task_setting() -> None:
    assert parsed("--tag-scheme", "plain").task_config == {"tag_scheme": "plain"}
    assert parsed().task_config == {}  # unset: the task's default
    with pytest.raises(
        ConfigError, match="--tag-scheme applies to the task token-classification, not regression"
    ):
        parsed("--tag-scheme", "plain", "--task", "regression")
    with pytest.raises(SystemExit):
        parsed("--tag-scheme", "BIO")  # argparse lists the choices


def test_a_run_keeps_its_settings_and_a_reload_reads_by_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "ner.jsonl", sentences(40, 3))
    out = tmp_path / "run"
    argv = ["train", "--data", str(data), "--model", TINY_BERT, "--method", "lora", "--epochs", "1",
            "--lr", "default", "--max-length", "24", "--tag-scheme", "plain", "--out", str(out)]  # fmt: skip
    assert cli_main(argv) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["primary_metric"] == "token_accuracy"  # plain: scored per word
    manifest = json.loads((out / "workbench.json").read_text())
    assert manifest["task_config"] == {"tag_scheme": "plain"}
    assert Predictor(out).task.settings.tag_scheme == "plain"
    assert "- Task: Token classification, tag_scheme plain" in (out / "README.md").read_text()
