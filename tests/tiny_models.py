"""Tiny random models for mechanics tests, built from a config once per test run.

transformers and peft test their mechanics on tiny random models (2 layers, hidden size 32) so
thousands of tests run on a CPU in minutes; the code paths are the real ones, only the weights
are small and random. We do the same: a 2-layer BERT with all-MiniLM-L6-v2's tokenizer and a
2-layer LLaMA with SmolLM2's tokenizer, installed as hub snapshots under their own hub ids in a
temporary models cache (``WORKBENCH_MODELS_CACHE``, which is also ``HF_HOME``). A test names
them exactly as a user names a hub model: the catalogue, workers, the web app, exports and the
model card's snippet in a fresh offline process all find them the way they find the default.

The real models stay for the tests whose figure matters (a method learns on real data, QLoRA
on SmolLM2, a layer sweep, a browser flow); those say so in their docstrings.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

TINY_BERT = "workbench-tests/tiny-bert"
TINY_LLAMA = "workbench-tests/tiny-llama"
# Shape facts the tests compute parameter counts from (the papers' formulas).
HIDDEN, LAYERS, HEADS, FFN = 32, 2, 4, 64


def prepare_models_cache(project_cache: Path, cache: Path) -> None:
    """Make ``cache`` a models cache for this test run, with the tiny models in its hub.

    The real models are linked in from ``project_cache`` (installed by ``make install``), so
    nothing large is copied or converted again; quantized copies of SmolLM2 go to the project's
    folder too, where the next run finds them.
    """
    from backend.offline_models import MINILM, SMOLLM2, offline_snapshot

    project_cache.mkdir(parents=True, exist_ok=True)
    for model in (MINILM, SMOLLM2):
        offline_snapshot(model, project_cache)  # no-op once `make install` has run
    hub = cache / "hub"
    hub.mkdir()
    for repo in (project_cache / "hub").glob("models--*"):
        (hub / repo.name).symlink_to(repo.resolve(), target_is_directory=True)
    (project_cache / "quantized").mkdir(exist_ok=True)
    (cache / "quantized").symlink_to((project_cache / "quantized").resolve(), target_is_directory=True)
    _install(hub, TINY_BERT, _tiny_bert, _snapshot(project_cache, MINILM.hub_id))
    _install(hub, TINY_LLAMA, _tiny_llama, _snapshot(project_cache, SMOLLM2.hub_id))


def _snapshot(cache: Path, hub_id: str) -> Path:
    from backend.hub_cache import snapshot_path

    path = snapshot_path(cache / "hub", hub_id)
    assert path is not None, f"{hub_id} is not installed in {cache}: run `make install`"
    return path


def _install(hub: Path, hub_id: str, build: object, tokenizer_from: Path) -> None:
    """Build the model (seeded: the same weights every run), save it with the real model's
    tokenizer, and lay it out as the hub snapshot of ``hub_id``."""
    import torch
    from transformers import AutoTokenizer

    from backend.hub_cache import install_snapshot

    tok = AutoTokenizer.from_pretrained(tokenizer_from)
    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        model = build(tok)  # type: ignore[operator]
        model.config._name_or_path = hub_id
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        install_snapshot(Path(folder), hub_id, hub)


def _tiny_bert(tok: object) -> object:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=len(tok),  # type: ignore[arg-type]
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=512,
    )
    return BertModel(config)


def _tiny_llama(tok: object) -> object:
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        vocab_size=len(tok),  # type: ignore[arg-type]
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS // 2,  # grouped-query attention, as SmolLM2 has
        intermediate_size=FFN,
        max_position_embeddings=512,
        bos_token_id=tok.bos_token_id,  # type: ignore[attr-defined]
        eos_token_id=tok.eos_token_id,  # type: ignore[attr-defined]
        tie_word_embeddings=True,
    )
    return LlamaModel(config)


def use_tiny_models_cache(project_cache: Path) -> None:
    """Point this process and every process it starts at a fresh cache with the tiny models.

    Set before anything imports huggingface_hub, which reads ``HF_HOME`` once, at import."""
    if "WORKBENCH_TESTS_MODELS_CACHE" not in os.environ:  # pytest-xdist workers share one
        cache = Path(tempfile.mkdtemp(prefix="workbench-models-"))
        atexit.register(shutil.rmtree, cache, ignore_errors=True)  # links and tiny models only
        os.environ.update(HF_HOME=str(cache), WORKBENCH_MODELS_CACHE=str(cache))
        prepare_models_cache(project_cache, cache)
        os.environ["WORKBENCH_TESTS_MODELS_CACHE"] = str(cache)
    cache_path = os.environ["WORKBENCH_TESTS_MODELS_CACHE"]
    os.environ.update(HF_HOME=cache_path, WORKBENCH_MODELS_CACHE=cache_path)
