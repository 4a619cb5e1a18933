"""The Train tab's line under the model picker: the chosen base model's size, whether it is an
encoder or a decoder, the memory a run would need with the base in fp32, 8-bit and 4-bit, and
whether that fits this machine's RAM or GPU (``/model_facts``, the same call scripts make).

Filled when the page loads and refreshed when anything it depends on changes; never while the
app starts, so the first page does not wait for torch.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.endpoints import Endpoints
from ui.feedback import problem
from ui.forms import MethodForms
from ui.tabs.train_common import Common


class FactsLine:
    """The handler: the values of the model, method, dataset, batch size, max length and the
    method's controls in, one Markdown line out (a problem shown inline, never a traceback)."""

    def __init__(self, endpoints: Endpoints, forms: MethodForms) -> None:
        self.endpoints = endpoints
        self.forms = forms

    def __call__(
        self,
        model: str | None,
        label: str,
        dataset_id: int | None,
        batch_size: float | None,
        max_length: float | None,
        checkpointing: str | None,
        *values: Any,
    ) -> str:
        try:
            m = self.endpoints.method(label)
            labels = self.endpoints.dataset(dataset_id)["label_counts"] if dataset_id else {}
            facts = self.endpoints.model_facts(
                model or None,
                m["key"],
                self.forms.method_config(m["key"], values),
                batch_size=int(batch_size) if batch_size else None,
                max_length=int(max_length) if max_length else None,
                num_labels=max(2, len(labels)),
                gradient_checkpointing=checkpointing,
            )
        except Exception as exc:  # noqa: BLE001 - e.g. a hub id while offline
            return problem(exc, "reading the model's facts", toast=False)
        return facts["text"]


def wire_model_facts(
    endpoints: Endpoints,
    demo: gr.Blocks,
    forms: MethodForms,
    common: Common,
    method: gr.Radio,
    dataset: gr.Dropdown,
) -> None:
    """Fill ``common.facts`` on page load and whenever an input changes.

    One listener for every trigger, with ``always_last``: while a model is being looked up
    (the first call imports torch; a hub id asks the hub), a slider dragged meanwhile costs
    one more call, not one per step.
    """
    inputs = [
        common.model, method, dataset, common.batch_size, common.max_length, common.gradient_checkpointing,
        *forms.components,
    ]  # fmt: skip
    triggers = [demo.load, *(component.change for component in inputs)]
    gr.on(
        triggers,
        FactsLine(endpoints, forms),
        inputs,
        [common.facts],
        api_visibility="private",
        show_progress="hidden",
        trigger_mode="always_last",
    )
