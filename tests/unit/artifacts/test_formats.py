"""Export formats are registered writers, and a task names the ones its runs get (issue 46): a
run folder holds what its task's writers write, in their order, and a format made on demand is
refused for a task that does not name it. LoRA on the tiny random BERT, trained once."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from backend.artifacts import formats
from backend.artifacts.save import save_run
from backend.artifacts.writer import Finished, Writer
from backend.catalogue import load_tokenizer, model_info
from backend.errors import ConfigError
from backend.tasks import registry as tasks
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data
from backend.training.loop import run_loop
from backend.training.outcome import RunContext, RunOutcome
from tests.tiny_models import TINY_BERT

LABELS = type(tasks.get("classification"))


class Notes(Writer):
    """A format of the test's own: one file that says what was in the folder before it."""

    key = "test-notes"
    label = "notes"

    def write(self, run: Finished) -> None:
        seen = sorted(p.name for p in run.out_dir.iterdir())
        (run.out_dir / "notes.json").write_text(json.dumps({"seen": seen, "method": run.manifest["method"]}))


class NotesOnly(LABELS):  # type: ignore[misc, valid-type]
    """The label task, with its weights and the test's notes but no model card or merge."""

    exports: ClassVar[tuple[str, ...]] = ("weights", "test-notes")


@pytest.fixture(scope="module")
def trained(tiny_csv: Path) -> tuple[RunOutcome, Any, Any, Any]:
    cfg = TrainConfig(
        data=str(tiny_csv), model=TINY_BERT, method="lora", epochs=1, batch_size=8, max_length=16,
        lr=None, max_train_samples=16, device="cpu",
    )  # fmt: skip
    data, info = load_data(cfg), model_info(TINY_BERT)
    tokenizer = load_tokenizer(info)
    outcome = run_loop(RunContext(cfg, data, info, tokenizer, Callback(), time.perf_counter()))
    return outcome, data, info, tokenizer


@pytest.fixture(scope="module", autouse=True)
def notes_format() -> None:
    formats.register(Notes())


def test_every_task_names_formats_that_exist_and_a_key_registers_once() -> None:
    for task in tasks.all_tasks():
        assert [w.key for w in formats.of(task)] == list(task.exports)
    with pytest.raises(RuntimeError, match="registered twice"):
        formats.register(Notes())
    with pytest.raises(ConfigError, match="unknown export format 'gguf'"):
        formats.get("gguf")


def test_a_run_folder_holds_what_its_tasks_formats_write(trained: Any, tmp_path: Path) -> None:
    outcome, data, info, tokenizer = trained
    labels = tmp_path / "labels"
    save_run(labels, outcome, info=info, tokenizer=tokenizer, data=data)
    assert "Trained with the adaptation workbench" in (labels / "README.md").read_text()  # our card
    assert not (labels / "notes.json").exists()

    notes = tmp_path / "notes"
    only = dataclasses.replace(data, task=NotesOnly())
    summary = save_run(notes, outcome, info=info, tokenizer=tokenizer, data=only)
    written = json.loads((notes / "notes.json").read_text())
    # the common files and the weights come before it, in the task's order
    assert {"workbench.json", "labels.json", "adapter_model.safetensors"} <= set(written["seen"])
    assert written["method"] == "lora"
    readme = notes / "README.md"  # PEFT's own card may be there; ours is not
    assert not readme.exists() or "Trained with the adaptation workbench" not in readme.read_text()
    assert summary["adapter_bytes"] == (notes / "adapter_model.safetensors").stat().st_size


def test_formats_export_through_the_registry(trained: Any, tmp_path: Path) -> None:
    """The merged model is made on demand from the folder; a format written with the run is in
    the run's zip and says so."""
    outcome, data, info, tokenizer = trained
    run = tmp_path / "run"
    save_run(run, outcome, info=info, tokenizer=tokenizer, data=data)
    merged = formats.get("merged").export(run, tmp_path / "merged.zip")
    assert merged.is_file() and (run / "merged" / "config.json").is_file()
    with pytest.raises(ConfigError, match="is in the run's own zip"):
        formats.get("weights").export(run, tmp_path / "weights.zip")
