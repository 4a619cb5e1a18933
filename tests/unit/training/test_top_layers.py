"""Training only the top N layers: the cached forward equals the model's own forward (logits,
loss and gradients), only the top layers and the head train, parameter counts follow, and the
exports are the standard libraries' (PEFT ``layers_to_transform`` / ``exclude_modules``,
AdapterHub ``leave_out``) reloading to the same logits. Real models, no mocks: MiniLM (6 layers)
and a randomly initialised 3-layer GPT-2 for the decoder path."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from backend.artifacts.write_weights import save_weights
from backend.catalogue import ModelInfo, default_model_path, load_classifier, load_tokenizer, model_info
from backend.data.batching import Encoded
from backend.data.prepare import Split
from backend.errors import ConfigError
from backend.methods import registry
from backend.methods.base import BuildContext
from backend.methods.layers import find_layer_list
from backend.training.params import count, count_parameters
from backend.training.top_layers import LowerLayerCache, cut_index

MODEL, LABELS, TOP, CUT = "all-MiniLM-L6-v2", ["neg", "pos"], 2, 4  # MiniLM has 6 layers
CPU = torch.device("cpu")
TEXTS = [
    "fun",
    "the movie was great and the cast was wonderful",
    "dull",
    "a long, slow and painful story with a weak ending that nobody in the room enjoyed at all",
    "superb score",
    "the plot was boring",
]
ROWS = [3, 0, 5, 1]  # different lengths: the batch has padding
CASES = [
    ("lora", {}),
    ("lora", {"targets": "all linear"}),
    ("ia3", {}),
    ("ia3", {"targets": "k,v only"}),
    ("adapter", {"placement": "houlsby"}),
    ("adapter", {"placement": "pfeiffer"}),
    ("adapter", {"placement": "parallel"}),
    ("full", {}),
]
IDS = [f"{m}-{'-'.join(str(v) for v in k.values()) or 'default'}" for m, k in CASES]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Batches of a few short rows: a second thread only adds contention (10x slower on a busy
    2-core machine), so this module runs on one and gives the setting back afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def info() -> ModelInfo:
    return model_info(MODEL)


def encode(info: ModelInfo) -> Encoded:
    split = Split(TEXTS, None, [i % 2 for i in range(len(TEXTS))], list(range(len(TEXTS))))
    return Encoded(load_tokenizer(info), split, max_length=32)


@pytest.fixture(scope="module")
def enc(info: ModelInfo) -> Encoded:
    return encode(info)


def built(info: ModelInfo, method: str, knobs: dict[str, Any], top: int = TOP, pad: int | None = None) -> Any:
    """The method on a fresh base, its trainable weights moved off their identity-like start
    (LoRA's B = 0, IA3's ones) so the top layers really change the output; eval mode."""
    spec = registry.get(method)
    torch.manual_seed(0)
    model = spec.build(
        load_classifier(info, LABELS, pad_token_id=pad),
        spec.make_config({**knobs, "top_layers": top}),
        BuildContext(info, LABELS),
    )
    with torch.no_grad():
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    return model.eval()


def layer_index(name: str, layers_name: str) -> int | None:
    prefix = layers_name + "."
    return int(name[len(prefix) :].split(".")[0]) if name.startswith(prefix) else None


def assert_same_outputs(model: Any, enc: Encoded, rows: list[int], cut: int) -> LowerLayerCache:
    """The cached forward gives the plain forward's logits and loss (eval mode: no dropout)."""
    cache = LowerLayerCache.build(model, enc, cut, CPU, batch_size=2)
    with torch.no_grad():
        plain = model(**enc.batch(rows))
        cached = cache.forward(model, rows)
    assert (plain.logits - cached.logits).abs().max().item() < 1e-4
    assert abs(plain.loss.item() - cached.loss.item()) < 1e-5
    assert plain.logits.std() > 0  # a degenerate model would make the comparison empty
    return cache


def test_cut_index() -> None:
    assert cut_index(6, 0) is None
    assert cut_index(6, 2) == 4
    assert cut_index(6, 5) == 1
    for bad in (6, 7):
        with pytest.raises(ConfigError, match="has only 6 layers; use 0 for all"):
            cut_index(6, bad)


@pytest.mark.parametrize(("method", "knobs"), CASES, ids=IDS)
def test_cached_forward_equals_the_models_and_only_the_top_layers_train(
    info: ModelInfo, enc: Encoded, method: str, knobs: dict[str, Any]
) -> None:
    assert len({len(enc.features[r]["input_ids"]) for r in ROWS}) == len(ROWS)
    model = built(info, method, knobs)
    layers_name, layers = find_layer_list(model)
    cache = assert_same_outputs(model, enc, ROWS, CUT)
    assert find_layer_list(model) == (layers_name, layers) and len(layers) == 6  # the full list is back
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    for n in trainable:  # in a top layer, or above them all (pooler, head)
        idx = layer_index(n, layers_name)
        assert (idx is not None and idx >= CUT) or any(k in n for k in ("classifier", "pooler")), n

    ran: list[int] = []
    hooks = [layer.register_forward_hook(lambda *_, i=i: ran.append(i)) for i, layer in enumerate(layers)]
    hooks.append(model.get_input_embeddings().register_forward_hook(lambda *_: ran.append(-1)))
    assert cache.feeder is not None and cache.feeder["name"].endswith("bert.embeddings")
    cache.forward(model, ROWS).loss.backward()
    for h in hooks:
        h.remove()
    assert ran == [4, 5]  # the lower layers never run, nor does the embeddings' lookup
    assert "forward" not in model.get_submodule(cache.feeder["name"]).__dict__  # its own forward is back
    cached_grads = {n: p.grad.clone() for n, p in trainable.items() if p.grad is not None}
    assert set(cached_grads) == set(trainable)  # every trainable weight is reached...
    assert all(p.grad is None for p in model.parameters() if not p.requires_grad)
    model.zero_grad(set_to_none=True)
    model(**enc.batch(ROWS)).loss.backward()
    for n, p in trainable.items():  # ...and gets the gradient the full forward gives it
        assert torch.allclose(cached_grads[n], p.grad, atol=1e-5, rtol=1e-4), n

    settings = {**knobs, "top_layers": TOP}
    restricted = count_parameters(MODEL, method, settings, tuple(LABELS))
    everything = count_parameters(MODEL, method, knobs, tuple(LABELS))
    assert count(model).trainable == restricted.trainable < everything.trainable
    assert restricted.total == count(model).total


def test_lora_counts_follow_the_paper_formula_on_two_layers() -> None:
    h, head = 384, 384 * 2 + 2
    assert count_parameters(MODEL, "lora", {"top_layers": 2}, tuple(LABELS)).trainable == (
        2 * 2 * (2 * 8 * h) + head
    )  # query and value of layers 4 and 5 only


@pytest.mark.parametrize("method", ["lora", "ia3", "adapter", "full"])
def test_top_layers_not_below_the_layer_count_is_a_config_error(info: ModelInfo, method: str) -> None:
    spec = registry.get(method)
    for top in (6, 12):
        with pytest.raises(ConfigError, match="has only 6 layers; use 0 for all"):
            spec.build(
                load_classifier(info, LABELS),
                spec.make_config({"top_layers": top}),
                BuildContext(info, LABELS),
            )
        with pytest.raises(ConfigError, match="has only 6 layers"):
            count_parameters(MODEL, method, {"top_layers": top}, tuple(LABELS))
    with pytest.raises(ConfigError, match="between 0 and 128"):
        spec.make_config({"top_layers": -1})
    assert spec.knob_text(spec.make_config({"top_layers": 2})).endswith("top=2")


def test_a_failing_forward_restores_the_model(info: ModelInfo, enc: Encoded) -> None:
    model = built(info, "lora", {})
    with torch.no_grad():
        before = model(**enc.batch(ROWS)).logits
    cache = LowerLayerCache.build(model, enc, CUT, CPU)
    name, layers = find_layer_list(model)

    def fail(*_: Any) -> None:
        raise RuntimeError("head failed")

    handle = model.base_model.model.classifier.register_forward_hook(fail)
    with pytest.raises(RuntimeError, match="head failed"):
        cache.forward(model, ROWS)
    handle.remove()
    assert find_layer_list(model) == (name, layers)
    with torch.no_grad():  # the feeding hook is gone too: other rows run normally
        assert torch.equal(model(**enc.batch(ROWS)).logits, before)
        assert model(**enc.batch([2, 4])).logits.shape == (2, 2)


def test_training_through_the_cache_lowers_the_loss(info: ModelInfo, enc: Encoded) -> None:
    model = built(info, "lora", {}).train()  # dropout on in the top layers
    cache = LowerLayerCache.build(model, enc, CUT, CPU)
    assert model.training  # build restores the mode it found
    rows = list(range(len(enc)))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(5):
        loss = cache.forward(model, rows).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def reload_peft(info: ModelInfo, out: Path) -> Any:
    from peft import PeftModel

    return PeftModel.from_pretrained(load_classifier(info, LABELS), str(out)).eval()


def reload_bottleneck(info: ModelInfo, out: Path) -> Any:
    from safetensors.torch import load_file

    from backend.methods import bottleneck

    model = load_classifier(info, LABELS)
    model.load_state_dict(load_file(str(out / "head.safetensors")), strict=False)
    return bottleneck.load(model, out).eval()


@pytest.mark.parametrize(
    ("method", "knobs", "key", "expected"),
    [
        ("lora", {}, "layers_to_transform", [4, 5]),
        ("lora", {"targets": "all linear"}, "exclude_modules", r"bert\.encoder\.layer\.(0|1|2|3)\..*"),
        ("ia3", {}, "exclude_modules", r"bert\.encoder\.layer\.(0|1|2|3)\..*"),
        ("adapter", {"placement": "houlsby"}, "layers", [4, 5]),
    ],
    ids=["lora", "lora-all-linear", "ia3", "adapter"],
)
def test_exports_are_standard_and_reload_identically(
    info: ModelInfo, enc: Encoded, tmp_path: Path, method: str, knobs: dict[str, Any], key: str, expected: Any
) -> None:
    model = built(info, method, knobs)
    library = registry.get(method).library
    save_weights(model, library, tmp_path)
    saved = json.loads(
        (tmp_path / ("adapter_config.json" if library == "peft" else "bottleneck_config.json")).read_text()
    )
    assert saved[key] == expected
    if method == "lora" and not knobs:
        assert saved["layers_pattern"] == "layer"
    reloaded = reload_peft(info, tmp_path) if library == "peft" else reload_bottleneck(info, tmp_path)
    cache = LowerLayerCache.build(model, enc, CUT, CPU)
    with torch.no_grad():
        trained = cache.forward(model, ROWS).logits
        again = reloaded(**enc.batch(ROWS)).logits
    assert (trained - again).abs().max().item() < 1e-4
    assert count(reloaded).total == count(model).total  # no adapter weights in the lower layers


def save_tiny(model: Any, out: Path) -> Path:
    """A random decoder as a local model folder, with a tokenizer of the same vocabulary."""
    model.save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(default_model_path() / name, out / name)  # MiniLM's: vocab_size 30522
    return out


@pytest.fixture(scope="module")
def tiny_decoders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Randomly initialised 3-layer GPT-2 (blocks in ``transformer.h``, learned positions) and
    LLaMA (``model.layers``, rotary positions, grouped-query attention)."""
    from transformers import GPT2Config, GPT2Model, LlamaConfig, LlamaModel

    torch.manual_seed(0)
    gpt2 = GPT2Model(GPT2Config(vocab_size=30522, n_positions=128, n_embd=64, n_layer=3, n_head=2))
    llama = LlamaModel(
        LlamaConfig(
            vocab_size=30522,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
    )
    return {
        "gpt2": save_tiny(gpt2, tmp_path_factory.mktemp("tiny-gpt2")),
        "llama": save_tiny(llama, tmp_path_factory.mktemp("tiny-llama")),
    }


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("method", ["lora", "ia3", "adapter", "full"])
def test_decoder_cached_forward_matches(tiny_decoders: dict[str, Path], arch: str, method: str) -> None:
    path = str(tiny_decoders[arch])
    info = model_info(path)
    assert info.is_decoder and info.num_layers == 3
    enc = encode(info)
    model = built(info, method, {}, top=1, pad=enc.tokenizer.pad_token_id)
    layers_name, _ = find_layer_list(model)
    for n, p in model.named_parameters():
        if p.requires_grad:  # the last layer, the final norm, the head
            idx = layer_index(n, layers_name)
            assert (idx is not None and idx >= 2) or any(k in n for k in ("score", "ln_f", "model.norm")), n
    cache = assert_same_outputs(model, enc, ROWS, 2)
    # What feeds layer 0, skipped by the cached forward: GPT-2 adds its position embeddings
    # before its dropout, LLaMA's token embeddings go straight in (rotary ones are per layer).
    assert cache.feeder is not None
    assert cache.feeder["name"].endswith({"gpt2": "transformer.drop", "llama": "model.embed_tokens"}[arch])
    counted = count_parameters(path, method, {"top_layers": 1}, tuple(LABELS)).trainable
    assert count(model).trainable == counted < count_parameters(path, method, {}, tuple(LABELS)).trainable
