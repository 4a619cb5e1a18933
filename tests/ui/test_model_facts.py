"""The Train tab's line under the model picker (issue 13): size, encoder or decoder, memory in
fp32 / 8-bit / 4-bit for the chosen method and batch, whether it fits; a hub id offline says it
needs internet, without a traceback.

The tab's own handler is private (not callable by gradio_client), so it is driven in-process
on the built app, the way its events call it; ``/model_facts``, the endpoint it calls, is
checked on the real server through gradio_client, as a script gets it.
"""

from __future__ import annotations

from typing import Any

import pytest

from backend.settings import Settings
from service.api import Workbench

DEFAULT = "all-MiniLM-L6-v2"
SMOLLM2 = "SmolLM2-135M-Instruct"
UNKNOWN = "nobody/no-such-model-xyz"  # offline in the tests (HF_HUB_OFFLINE=1)
QUANTS = {"none", "8bit", "4bit"}


@pytest.fixture(scope="module")
def facts_event(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The built app's listener that fills the Train tab's ``#model-facts`` line."""
    from ui.app import build

    data = tmp_path_factory.mktemp("facts")
    settings = Settings(
        data_dir=data,
        models_cache=Settings.from_env().models_cache,
        db_url=f"sqlite:///{data / 'workbench.db'}",
    )
    demo = build(Workbench(settings))
    line = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "model-facts")
    (event,) = [fn for fn in demo.fns.values() if line in fn.outputs]
    return event


def shown(event: Any, **changed: Any) -> str:
    """The line the tab shows with the form at its defaults, but for ``changed`` (by label)."""
    values = [changed.get(getattr(b, "label", None), b.value) for b in event.inputs]
    return str(event.fn(*values))


def test_the_line_is_filled_on_load_and_follows_every_input(facts_event: Any) -> None:
    labels = {getattr(b, "label", None) for b in facts_event.inputs}
    assert {"Base model", "Method", "Training data", "Batch size", "Max length"} <= labels
    triggers = set(facts_event.targets)
    assert any(event == "load" for _, event in triggers), "not filled when the page loads"
    missing = [b.label for b in facts_event.inputs if (b._id, "change") not in triggers]
    assert missing == [], f"changing these leaves the line stale: {missing}"
    # Coalesced: a dragged slider queues one more lookup, not one per step; no public endpoint.
    assert facts_event.trigger_mode == "always_last"
    assert facts_event.api_visibility == "private"


def test_the_tab_shows_the_default_model_as_an_encoder(facts_event: Any) -> None:
    line = shown(facts_event)
    assert "22.7M parameters" in line and "encoder" in line, line
    assert all(name in line for name in ("fp32", "8-bit", "4-bit")), line
    assert "this machine:" in line and "fits" in line, line
    assert "batch 32 × 128 tokens" in line, line  # the form's batch size and max length


def test_the_tab_shows_smollm2_as_a_decoder_of_its_size(facts_event: Any) -> None:
    line = shown(facts_event, **{"Base model": SMOLLM2, "Batch size": 8, "Max length": 64})
    assert "134.5M parameters" in line and "decoder" in line, line
    assert "batch 8 × 64 tokens" in line, line
    assert "with gradient checkpointing" in line, line  # auto: on above 100M parameters
    off = shown(
        facts_event,
        **{"Base model": SMOLLM2, "Batch size": 8, "Max length": 64, "Gradient checkpointing": "off"},
    )
    assert "checkpointing" not in off and "134.5M parameters" in off, off


def test_the_tab_says_an_unknown_hub_id_needs_internet(facts_event: Any) -> None:
    line = shown(facts_event, **{"Base model": UNKNOWN})
    assert line.startswith("⚠️") and UNKNOWN in line and "needs internet" in line, line
    assert "Traceback" not in line and "Unexpected error" not in line, line


def test_the_endpoint_describes_the_default_and_smollm2(client: Any) -> None:
    default = client.predict(api_name="/model_facts")
    assert (default["model"], default["architecture"]) == (DEFAULT, "encoder")
    assert set(default["memory_mb"]) == set(default["fits"]) == QUANTS
    assert "parameters" in default["text"] and "encoder" in default["text"]

    small = client.predict(model=SMOLLM2, method="LoRA", batch_size=8, max_length=64, api_name="/model_facts")
    big = client.predict(model=SMOLLM2, method="lora", batch_size=64, max_length=64, api_name="/model_facts")
    assert small["architecture"] == "decoder" and "134.5M" in small["text"]
    assert small["hub_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert big["memory_mb"]["none"] > small["memory_mb"]["none"], "a bigger batch needs more memory"


def test_the_endpoint_refuses_an_offline_hub_id_and_a_server_path_with_messages(client: Any) -> None:
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as caught:
        client.predict(model=UNKNOWN, api_name="/model_facts")
    assert "needs internet" in str(caught.value) and "Traceback" not in str(caught.value)
    with pytest.raises(AppError, match="server paths are not accepted"):
        client.predict(model="/tmp/x", api_name="/model_facts")
