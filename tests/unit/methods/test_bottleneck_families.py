"""Our bottleneck module on each family it names (``backend.methods.bottleneck.FAMILIES``).

BERT and Llama are checked against AdapterHub's outputs (``test_adapter_parity.py``); GPT-2 has no
such record, so here every family is held to what the unified view says of it: an adapter whose
up-projection is zero leaves every hidden state as it was, one with weights changes the layers it
sits in and none below, and only the adapters (not the base) get gradients.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from backend.methods import bottleneck

SHAPE = {"hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 64}


def tiny(family: str) -> Any:
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model, LlamaConfig, LlamaModel

    torch.manual_seed(0)
    if family == "bert":
        return BertModel(BertConfig(**SHAPE, intermediate_size=64)).eval()
    if family == "llama":
        return LlamaModel(LlamaConfig(**SHAPE, intermediate_size=64, num_key_value_heads=2)).eval()
    return GPT2Model(GPT2Config(n_embd=32, n_layer=3, n_head=4, vocab_size=64)).eval()


def hidden(model: Any) -> list[torch.Tensor]:
    ids = torch.arange(4, 14).reshape(2, 5)
    return list(model(input_ids=ids, output_hidden_states=True).hidden_states)


@pytest.mark.parametrize("name", ["houlsby", "pfeiffer", "parallel"])
@pytest.mark.parametrize("family", ["bert", "llama", "gpt2"])
def test_each_family_takes_each_preset_where_the_view_puts_it(family: str, name: str) -> None:
    base = tiny(family)
    with torch.no_grad():
        before = hidden(base)
    model = tiny(family)
    adapters = bottleneck.attach(model, bottleneck.preset(name, 8, layers=[1, 2]))
    assert sorted(adapters) == ["1", "2"] and all(sorted(a) == sorted(bottleneck.PRESETS[name]["sites"])
                                                  for a in adapters.values())  # fmt: skip
    for adapter in (a for here in adapters.values() for a in here.values()):
        torch.nn.init.zeros_(adapter.up.weight)  # a zero update: the model is the base
    with torch.no_grad():
        assert all(torch.equal(a, b) for a, b in zip(hidden(model), before, strict=True))
    generator = torch.Generator().manual_seed(1)
    for p in adapters.parameters():
        p.data = torch.randn(p.shape, generator=generator) * 0.3
    with torch.no_grad():
        after = hidden(model)
    # hidden_states[i] is layer i's output (0: the embeddings): layers 0 and 1 have no adapter
    assert torch.equal(after[0], before[0]) and torch.equal(after[1], before[1])
    assert (after[2] - before[2]).abs().max() > 1e-3


@pytest.mark.parametrize("family", ["bert", "llama", "gpt2"])
def test_only_the_adapters_learn(family: str) -> None:
    model = tiny(family)
    for p in model.parameters():
        p.requires_grad_(False)
    adapters = bottleneck.attach(model, bottleneck.preset("houlsby", 8))
    hidden(model)[-1].pow(2).mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in adapters.parameters())
    assert all(p.grad is None for n, p in model.named_parameters() if "bottleneck_adapters" not in n)


def test_an_architecture_it_does_not_know_is_refused_by_name() -> None:
    from transformers import OPTConfig, OPTModel

    from backend.catalogue import ModelInfo
    from backend.methods.adapter import refuses

    opt = OPTModel(OPTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
                             vocab_size=64, word_embed_proj_dim=32))  # fmt: skip
    with pytest.raises(ValueError, match="do not know the opt architecture"):
        bottleneck.attach(opt, bottleneck.preset("houlsby", 8))
    reason = refuses(ModelInfo("facebook/opt-125m", "", "opt", 768, 12, True))
    assert reason is not None and "do not support opt models" in reason and "choose LoRA" in reason
