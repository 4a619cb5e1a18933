"""/model_facts is reachable by anyone who reaches the port: the shape asked about is checked
before anything is built from it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from backend.errors import ConfigError
from backend.settings import Settings
from service.api import Workbench


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ({"num_labels": 10**9}, "number of labels must be between 2 and 10000"),
        ({"batch_size": 0}, "batch size must be between 1 and 4096"),
        ({"max_length": 10**7}, "max length must be between 8 and 8192"),
        ({"gradient_checkpointing": "sometimes"}, "gradient checkpointing must be one of auto, on, off"),
    ],
)
def test_a_shape_out_of_range_is_a_clear_error_at_once(
    tmp_path: Path, shape: dict[str, object], message: str
) -> None:
    bench = Workbench(Settings(tmp_path, Settings.from_env().models_cache, f"sqlite:///{tmp_path / 'w.db'}"))
    began = time.monotonic()
    with pytest.raises(ConfigError, match=message):
        bench.model_facts(None, "lora", **shape)
    assert time.monotonic() - began < 5  # refused before a billion label names were made
