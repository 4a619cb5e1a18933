"""One configuration of bench/models.py, trained in its own process so its peak memory is its own.

    .venv/bin/python bench/models_run.py NAME --train T.csv --eval E.csv [--epochs 1] [--device cpu]
    .venv/bin/python bench/models_run.py NAME --train T.csv --eval E.csv --load-only

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

# Where 4-bit should pay: a model whose weights outweigh the process and the activations.
# None ships offline, so this is SmolLM2-360M's published shape with random weights (seed 0)
# and SmolLM2-135M's tokenizer: its memory and speed are real, its accuracy means nothing
# (random weights), and it trains on SYNTHETIC_ROWS of the rows only (max_train_samples).
SYNTHETIC = "llama-360m-random"
SYNTHETIC_SHAPE = {
    "hidden_size": 960, "intermediate_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 15,
    "num_key_value_heads": 5, "vocab_size": 49152, "max_position_embeddings": 8192,
    "tie_word_embeddings": True, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
}  # fmt: skip
SYNTHETIC_ROWS = 160
GRID.update({"360m-fp32": (SYNTHETIC, "none", "fp32"), "360m-4bit": (SYNTHETIC, "4bit", "fp32")})


def synthetic_model(models_cache: Path) -> str:
    """The random-weight 360M LLaMA's folder, made once per machine (outside models_cache/, so
    the model picker never lists it)."""
    folder = Path(tempfile.gettempdir()) / f"workbench-bench-{SYNTHETIC}"
    if (folder / "config.json").is_file():
        return str(folder)
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from backend.catalogue import model_info

    torch.manual_seed(0)
    scratch = Path(tempfile.mkdtemp(prefix=f"{folder.name}-", dir=folder.parent))
    LlamaForCausalLM(LlamaConfig(**SYNTHETIC_SHAPE)).save_pretrained(scratch)
    AutoTokenizer.from_pretrained(model_info(SMOLLM2.hub_id, models_cache).path).save_pretrained(scratch)
    scratch.rename(folder)
    return str(folder)


def resolve(model: str, models_cache: Path) -> str:
    return synthetic_model(models_cache) if model == SYNTHETIC else model


def base_memory_mb(model: str, quant: str, models_cache: Path) -> float:
    """The base classifier's weights as loaded with ``quant``, in MiB (the head included)."""
    from backend.catalogue import load_classifier, load_tokenizer, model_info

    info = model_info(model, models_cache)
    base = load_classifier(info, ["0", "1"], quant, load_tokenizer(info).pad_token_id)
    return round(base.get_memory_footprint() / 2**20, 1)


def first_load(name: str) -> dict[str, Any]:
    """Load configuration ``name``'s quantized base once, from fp32 where its quantized copy
    (backend/quantized_copy.py) is not saved yet; the peak RSS of that load, and what it did."""
    settings = Settings.from_env()
    apply_environment(settings)
    from backend.catalogue import (
        load_classifier,
        load_tokenizer,
        model_info,
        quantization_config,
        quantized_copy_folder,
    )
    from backend.quantized_copy import ready
    from backend.training.runtime import peak_rss_mb

    model, quant, _ = GRID[name]
    info = model_info(resolve(model, settings.models_cache), settings.models_cache)
    copy = quantized_copy_folder(info, quant, quantization_config(quant, info))
    saved_before = ready(copy)
    load_classifier(info, ["0", "1"], quant, load_tokenizer(info).pad_token_id)
    return {
        "name": name,
        "first_load_peak_rss_mb": round(peak_rss_mb(), 1),
        "copy": "read" if saved_before else "made" if ready(copy) else "none",
    }


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
    model = resolve(model, settings.models_cache)
    cfg = TrainConfig(
        data=train, eval_data=dev, model=model, method="lora", quant=quant, precision=precision,
        epochs=epochs, lr=None, batch_size=BATCH_SIZE, max_length=MAX_LENGTH,
        early_stopping_patience=0, seed=SEED, device=device,
        max_train_samples=SYNTHETIC_ROWS if GRID[name][0] == SYNTHETIC else None,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-models-") as out:
        s = run_training(cfg, Path(out) / "run", models_cache=settings.models_cache)
    gc.collect()
    # Loaded after training: the summary's peak RSS and peak GPU memory were taken before.
    memory = base_memory_mb(model, quant, settings.models_cache)
    keep = ("accuracy", "macro_f1", "seconds_per_epoch", "train_seconds", "peak_rss_mb", "peak_gpu_mb")
    return {
        "name": name,
        "model": GRID[name][0],
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
    p.add_argument("--load-only", action="store_true", help="only load the quantized base (see first_load)")
    args = p.parse_args()
    if args.load_only:
        print(json.dumps(first_load(args.name)), flush=True)
        return 0
    print(json.dumps(run(args.name, args.train, args.eval, args.epochs, args.device)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
