"""Export format ``model_card``: the README.md of a run folder (``backend.artifacts.model_card``
renders it), with the size of the weights written before it."""

from __future__ import annotations

from backend.artifacts.model_card import render_model_card
from backend.artifacts.write_weights import adapter_bytes
from backend.artifacts.writer import Finished, Writer


class ModelCard(Writer):
    key = "model_card"
    label = "the model card"

    def write(self, run: Finished) -> None:
        size = adapter_bytes(run.out_dir, run.manifest["library"])
        card = render_model_card(run.manifest, run.cfg, {**run.outcome.summary, "adapter_bytes": size})
        (run.out_dir / "README.md").write_text(card)
