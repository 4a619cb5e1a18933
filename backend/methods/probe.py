"""Probing: a frozen encoder, a linear or small MLP head on one layer's pooled output.

Training runs on cached features (see ``backend.probing.run``): the encoder is frozen, so
every layer's pooled representation is computed once and heads train on those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.methods.base import BuildContext, MethodConfig, MethodSpec, knob

# Layer "auto" (the default; see backend.probing.layer_choice): no fixed layer held on the four
# shared datasets. The last was best on sst2 and emotion, 5 points of macro-F1 behind layer 3 on
# sms_spam and 7 of accuracy behind layer 4 on rte (layer sweeps of 1,000 rows, bench/TASKS.md).
AUTO_LAYER = -2


@dataclass
class Config(MethodConfig):
    head: str = knob(
        "linear",
        "Probe head",
        "A linear classifier, or an MLP with one hidden layer.",
        choices=("linear", "mlp"),
    )
    hidden_size: int = knob(
        256, "MLP hidden size", "Hidden units of the MLP head (ignored for linear).", min=8, max=4096, step=8
    )
    pooling: str = knob(
        "mean",
        "Pooling",
        "Mean of the token vectors, or the first ([CLS]) token; on a decoder model (no [CLS]) "
        "'cls' takes the last real token, the one that has seen the whole text.",
        choices=("mean", "cls"),
        choice_labels=("mean", "[CLS] / last token"),
    )
    layer: int = knob(
        AUTO_LAYER,
        "Layer",
        "Which layer to probe: auto (the layer whose probe does best on rows held out from the "
        "training data), last, 0 = embeddings, 1..L = transformer layers.",
        min=AUTO_LAYER,
        max=96,
        step=1,
        value_words={AUTO_LAYER: "auto", -1: "last"},
    )
    sweep_layers: bool = knob(
        False,
        "Probe every layer",
        "Train one probe per layer (nearly free with cached features) and report accuracy by layer.",
    )


def build(model: Any, cfg: Config, ctx: BuildContext) -> Any:
    from backend.methods.probe_head import ProbeModel  # torch: only once a model is built

    return ProbeModel(model, cfg, ctx)


def name_text(cfg: Config) -> str | None:
    """A layer sweep reads "all layers" in run names (and the probing tab sorts those first)."""
    return "all layers" if cfg.sweep_layers else None  # else "layer auto head=mlp", from the knobs


SPEC = MethodSpec(
    key="probe",
    label="Probing",
    config_cls=Config,
    build=build,
    default_lr=1e-2,
    lr_candidates=(1e-3, 3e-3, 1e-2, 3e-2),
    description="Frozen model, train only a small head on one layer's pooled output. Shows what "
    "each layer already encodes (BERTology); the cheapest method by far.",
    library="own",
    default_epochs=10,
    runner="cached_features",
    gradient_checkpointing=False,  # nothing trains through the encoder: no backward to save memory in
    resumable=False,  # retrains from cached features in seconds: checkpoints would cost more
    name_knob="layer",
    name_text=name_text,
    cli_flags=("layer",),
    # --layer all: one probe per layer (--layer auto comes from the knob's value words)
    cli_words={"layer": {"all": {"sweep_layers": True}}},
    refuses_task=lambda task: (
        None
        if task.feature_head
        else "it trains a head on frozen features, and this task's outputs come from no such head"
    ),
)
