"""Methods and tasks meet in one place (issue 46): a method says which tasks it cannot train
and why (``MethodSpec.refuses_task``), and that one answer is asked everywhere: validation of a
run that names its task (the CLI prints that ConfigError as its one ``error:`` line; its
``--task`` choices are fixed at import, so a test task cannot be named there), the catalogue
the Train tab reads, and the Train tab's warning under the method. A task of the test's own,
with no feature head (as generation will be), registered for the test and removed after: the
probe refuses it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.errors import ConfigError
from backend.methods import registry as methods
from backend.settings import Settings
from backend.tasks import registry as tasks
from backend.training.config import TrainConfig, validate
from service.api import Workbench
from tests.registered_task import registered
from ui.endpoints import Endpoints

REASON = "Probing cannot train no head (test): it trains a head on frozen features"


class NoHead(type(tasks.get("classification"))):  # type: ignore[misc]
    key = "test-no-head"
    label = "No head (test)"
    feature_head = False


@pytest.fixture
def no_head() -> Iterator[Any]:
    with registered(NoHead()) as task:
        yield task


def test_a_run_naming_a_task_its_method_cannot_train_is_refused(no_head: Any, tiny_csv: Path) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(REASON)}.*; choose another method$"):
        validate(TrainConfig(data=str(tiny_csv), method="probe", task="test-no-head"))
    methods.get("lora").check_task(no_head)  # LoRA can (the config's task choices are fixed at import)
    validate(TrainConfig(data=str(tiny_csv), method="probe", task="classification"))


def test_the_catalogue_and_the_train_tab_say_why(no_head: Any, tmp_path: Path) -> None:
    from ui.tabs.train import _Handlers

    data = tmp_path / "data"
    bench = Workbench(Settings(data_dir=data, models_cache=Settings.from_env().models_cache,
                               db_url=f"sqlite:///{data / 'w.db'}"))  # fmt: skip
    refused = {m["key"]: m["refused_tasks"] for m in bench.list_methods()}
    assert refused["probe"] == {"test-no-head": REASON + ", and this task's outputs come from no such head"}
    assert not any(refused[k] for k in refused if k != "probe")
    handlers = _Handlers(Endpoints(bench), None, None)  # type: ignore[arg-type]
    assert handlers.refusal("Probing", "test-no-head", None).startswith(f"⚠ {REASON}")
    assert handlers.refusal("Probing", "classification", None) == ""
    assert handlers.refusal("LoRA", "test-no-head", None) == ""
