"""A task assembles its columns from others (issue 46: one 0/1 column per label, the multi-label
task's third kind of data): ``Task.frame`` runs at every task's defaults on every table read,
and at a named task's settings when a run names it. A task of the test's own, registered for
the test and removed after: one label column made from 0/1 columns named ``is_<label>``, or
from the columns its setting names."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from backend.data.prepare import prepare
from backend.data.read import read_table
from backend.errors import DataError
from backend.knobs import knob
from backend.tasks import registry
from tests.registered_task import registered

LABELS = type(registry.get("classification"))


@dataclasses.dataclass(frozen=True)
class Columns:
    columns: str = knob("", "Label columns", "0/1 columns, one per label, comma-separated.")


class FromFlags(LABELS):  # type: ignore[misc, valid-type]
    key = "test-from-flags"
    label = "From 0/1 columns"
    settings_cls = Columns
    settings = Columns()

    def frame(self, df: Any, source: str) -> Any:
        named = [c.strip() for c in self.settings.columns.split(",") if c.strip()]
        flags = named or [c for c in df.columns if str(c).startswith("is_")]
        missing = [c for c in flags if c not in df.columns]
        if missing:
            raise DataError(f"{source}: no column {missing[0]!r} (label columns)")
        if len(flags) < 2 or "label" in df.columns:
            return df
        label = [next((str(c).removeprefix("is_") for c in flags if str(row[c]) == "1"), "none")
                 for _, row in df.iterrows()]  # fmt: skip
        return df.drop(columns=flags).assign(label=label)


@pytest.fixture
def from_flags() -> Iterator[FromFlags]:
    with registered(FromFlags()) as task:
        yield task


def write(path: Path, flags: tuple[str, str]) -> Path:
    """Texts, an id of numbers (so that the multi-label task's own detection of 0/1 columns stays
    out: it wants texts beside them) and the two 0/1 columns."""
    rows = [(f"text {i}", i, int(i % 3 == 0), int(i % 3 != 0)) for i in range(30)]
    pd.DataFrame(rows, columns=["text", "id", *flags]).to_csv(path, index=False)
    return path


def test_every_tasks_frame_runs_at_its_defaults_when_a_table_is_read(tmp_path: Path, from_flags: Any) -> None:
    path = write(tmp_path / "flags.csv", ("is_pos", "is_neg"))
    assert list(read_table(path).columns) == ["text", "id", "label"]
    data = prepare(path)  # auto: the assembled column is found as the label
    assert data.label_names == ["neg", "pos"] and data.mapping.label == "label"


def test_a_named_task_frames_the_table_at_the_runs_settings(tmp_path: Path, from_flags: Any) -> None:
    path = write(tmp_path / "named.csv", ("pos", "neg"))  # no is_ prefix: the defaults find nothing
    assert list(read_table(path).columns) == ["text", "id", "pos", "neg"]
    data = prepare(path, task="test-from-flags", task_config={"columns": "pos,neg"}, label_column="label")
    assert data.task.key == "test-from-flags" and data.label_names == ["neg", "pos"]
    with pytest.raises(DataError, match="no column 'joy' \\(label columns\\)"):
        prepare(path, task="test-from-flags", task_config={"columns": "pos,joy"})


def test_a_setting_only_one_task_has_implies_that_task(from_flags: Any) -> None:
    assert registry.resolve_key("auto", [], ["columns"]) == "test-from-flags"
    assert registry.resolve_key("auto", [], ["tag_scheme"]) == "token-classification"
    assert registry.resolve_key("classification", [], ["columns"]) == "classification"
