"""One configuration of bench/models.py, trained in its own process so its peak memory is its own.

    .venv/bin/python bench/models_run.py NAME --train T.csv --eval E.csv [--epochs 1] [--device cpu]

Prints one JSON line: the run's figures and the base model's memory as loaded with the
configuration's quantization (``get_memory_footprint()``).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.offline_models import MINILM, SMOLLM2  # noqa: E402 - needs ROOT on the path
from backend.settings import Settings, apply_environment  # noqa: E402

# name -> (base model, quantization, compute precision). The quantized rows compute in fp32
# (the 4-bit config's compute dtype) so they differ from the fp32 row in the weights alone;
# "bf16" is autocast over fp32 weights, the workbench's only bf16 mode.
GRID: dict[str, tuple[str, str, str]] = {
    "fp32": (SMOLLM2.hub_id, "none", "fp32"),
    "bf16": (SMOLLM2.hub_id, "none", "bf16"),
    "8bit": (SMOLLM2.hub_id, "8bit", "fp32"),
    "4bit": (SMOLLM2.hub_id, "4bit", "fp32"),
    "encoder": (MINILM.name, "none", "fp32"),
}
BATCH_SIZE, MAX_LENGTH, SEED = 16, 64, 0


def base_memory_mb(model: str, quant: str, models_cache: Path) -> float:
    """The base classifier's weights as loaded with ``quant``, in MiB (the head included)."""
    from backend.catalogue import load_classifier, load_tokenizer, model_info

    info = model_info(model, models_cache)
    base = load_classifier(info, ["0", "1"], quant, load_tokenizer(info).pad_token_id)
    return round(base.get_memory_footprint() / 2**20, 1)


def gpu_name(device: str) -> str | None:
    import torch

    return torch.cuda.get_device_name(device) if device.startswith("cuda") else None


def run(name: str, train: str, dev: str, epochs: int, device: str) -> dict[str, Any]:
    """Train configuration ``name`` with LoRA and return its figures."""
    settings = Settings.from_env()
    apply_environment(settings)  # before transformers is imported: it reads HF_HOME then
    from backend.run import run_training
    from backend.training.config import TrainConfig
    from backend.training.runtime import peak_rss_mb

    start_rss = peak_rss_mb()  # python + torch + transformers, before any weights
    model, quant, precision = GRID[name]
    cfg = TrainConfig(
        data=train, eval_data=dev, model=model, method="lora", quant=quant, precision=precision,
        epochs=epochs, lr=None, batch_size=BATCH_SIZE, max_length=MAX_LENGTH,
        early_stopping_patience=0, seed=SEED, device=device,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-models-") as out:
        s = run_training(cfg, Path(out) / "run", models_cache=settings.models_cache)
    gc.collect()
    # Loaded after training: the summary's peak RSS and peak GPU memory were taken before.
    memory = base_memory_mb(model, quant, settings.models_cache)
    keep = ("accuracy", "macro_f1", "seconds_per_epoch", "train_seconds", "peak_rss_mb", "peak_gpu_mb")
    return {
        "name": name,
        "model": model,
        "quant": quant,
        "precision": s.get("precision", precision),
        "device": s["device"],
        "gpu": gpu_name(device),
        **{k: s.get(k) for k in keep},
        "start_rss_mb": round(start_rss, 1),
        "model_mb": memory,
        "trainable_params": s["trainable_params"],
        "train_rows": s["train_rows"],
        "eval_rows": s["eval_rows"],
        "lr": s.get("lr"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", choices=list(GRID))
    p.add_argument("--train", required=True)
    p.add_argument("--eval", required=True)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    print(json.dumps(run(args.name, args.train, args.eval, args.epochs, args.device)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
