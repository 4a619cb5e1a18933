"""Layer "auto" for probes: the layer whose head does best on rows held out from training.

No fixed layer held on the four shared datasets (see ``backend.methods.probe.AUTO_LAYER``), and
every layer's features are cached anyway, so a head per layer on a training slice costs seconds.
The evaluation set is never read: one seeded, stratified slice of the training rows judges, and
the run then trains its head on every training row at the chosen layer.

The last layer (the old default) is kept unless another beats it beyond the noise: by more
than KEEP_DEFAULT_SE paired standard errors of the per-row held-out losses, the rule the
learning-rate search uses to leave a method's default.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import torch

from backend.methods import registry
from backend.methods.probe import Config
from backend.probing.heads import train_head
from backend.tasks import registry as tasks
from backend.tasks.base import Task
from backend.training.callbacks import Callback, TrainingCancelled
from backend.training.config import AUTO, TrainConfig
from backend.training.lr_search import holdout_split
from backend.training.lr_search_noise import KEEP_DEFAULT_SE, Score, paired_gap, score_probs

# A larger slice than the learning-rate search's (15%, at most 200 rows): heads on cached
# features are cheap, and neighbouring layers differ by a few points, which 200 rows cannot tell.
HOLDOUT_FRACTION = 0.2
HOLDOUT_MIN, HOLDOUT_MAX = 32, 2000
# A short fit ranks the layers as the full one does: 5 epochs at batch 128 chose the same layer
# as every epoch of the run's plan at batch 32 on all four shared datasets (1,000 rows) in a
# third to a sixth of the time (0.3-0.5 s against 0.6-2.2 s), which kept the probe's "auto"
# within 15% of its run (at batch 32: 13-22% of a run that computes its features).
CHOICE_EPOCHS, CHOICE_BATCH = 5, 128


def choose_layer(
    train: torch.Tensor, y: torch.Tensor, pcfg: Config, cfg: TrainConfig, label_names: list[str],
    epochs: int, cb: Callback, task: Task | None = None,
) -> dict[str, Any]:  # fmt: skip
    """``train``: every layer's pooled training features [layers + 1, rows, hidden]; returns the
    choice and each layer's held-out score, as recorded in the summary and the model card."""
    started = time.perf_counter()
    rows = min(HOLDOUT_MAX, max(HOLDOUT_MIN, round(HOLDOUT_FRACTION * len(y))), len(y) // 2)
    task = task or tasks.get(None)
    fit, held = holdout_split(task.strata(y.tolist()), rows, cfg.seed)
    # A typed rate is what the run will train with; with "auto" the method's default, as the
    # search keeps it unless beaten (it then searches the chosen layer only).
    lr = registry.get(cfg.method).default_lr if cfg.lr == AUTO else cfg.lr
    head_cfg = replace(
        cfg, lr=lr, epochs=min(epochs, CHOICE_EPOCHS), batch_size=max(cfg.batch_size, CHOICE_BATCH)
    )
    held_y = y[held].numpy()
    scores: list[Score] = []
    for layer in range(train.shape[0]):
        if cb.should_cancel():
            raise TrainingCancelled(f"cancelled while choosing the layer ({layer} of {train.shape[0]} tried)")
        head, _, _ = train_head(
            train[layer][fit], y[fit], train[layer][held], held_y, pcfg, head_cfg, label_names, None, task
        )
        with torch.no_grad():
            scores.append(score_probs(held_y, task.outputs(head.eval()(train[layer][held])).numpy(), task))
    last = len(scores) - 1
    best = min(range(len(scores)), key=lambda i: (scores[i].loss, -i))
    gap, se = paired_gap(scores[last].rows, scores[best].rows)
    chosen = best if best != last and gap > KEEP_DEFAULT_SE * se else last
    return {
        "chosen": chosen,
        "best": best,
        "kept_last": chosen == last and best != last,
        "layers": [
            {"layer": i, "holdout_loss": round(s.loss, 4), "holdout_accuracy": round(s.accuracy, 4)}
            for i, s in enumerate(scores)
        ],
        "metric": "held-out loss (lower is better)",
        "holdout_rows": len(held),
        "train_rows": len(fit),
        "lr": lr,
        "seconds": round(time.perf_counter() - started, 3),
    }


def describe_layer_choice(choice: dict[str, Any]) -> str:
    """One line for the log and the model card."""
    scores = {r["layer"]: r for r in choice["layers"]}
    last, chosen, best = max(scores), choice["chosen"], choice["best"]

    def score(layer: int) -> str:
        row = scores[layer]
        return f"loss {row['holdout_loss']:.4f}, accuracy {row['holdout_accuracy']:.3f}"

    basis = f"on {choice['holdout_rows']} rows held out from the training data"
    if chosen != last:
        return (
            f"layer auto chose layer {chosen} ({score(chosen)}; the last layer, {last}: {score(last)}) "
            f"{basis}"
        )
    if choice["kept_last"]:
        return (
            f"layer auto kept the last layer, {last} ({score(last)}): layer {best} ({score(best)}) "
            f"was not better beyond the noise {basis}"
        )
    return f"layer auto chose the last layer, {last} ({score(last)}), the best {basis}"
