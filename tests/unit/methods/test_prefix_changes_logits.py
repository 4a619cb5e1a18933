"""The guard on transformers' upper bound (requirements.txt: below 5.24).

transformers 5.24 renamed the forward's ``past_key_values`` to ``cache``; peft 0.21.2 looks for
the old name and then refuses prefix tuning on encoders and on sequence classification ("Model
does not support past key values which are required for prefix tuning"), or, were it to pass
the prefix under a name the model ignores, would train nothing. Whoever lifts the bound sees
this test fail, on every head the workbench puts prefix tuning on.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

SHAPE = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 64}
HEADS = [
    ("bert", "AutoModelForSequenceClassification", "SEQ_CLS"),
    ("bert", "AutoModelForTokenClassification", "TOKEN_CLS"),
    ("llama", "AutoModelForSequenceClassification", "SEQ_CLS"),
    ("llama", "AutoModelForTokenClassification", "TOKEN_CLS"),
    ("llama", "AutoModelForCausalLM", "CAUSAL_LM"),
]


def tiny(family: str, auto_class: str) -> Any:
    import transformers
    from transformers import BertConfig, LlamaConfig

    torch.manual_seed(0)
    config: Any
    if family == "bert":
        config = BertConfig(**SHAPE, intermediate_size=64)
    else:
        config = LlamaConfig(**SHAPE, intermediate_size=64, num_key_value_heads=2, pad_token_id=0)
    config.num_labels = 3
    return getattr(transformers, auto_class).from_config(config).eval()


@pytest.mark.parametrize(("family", "auto_class", "task_type"), HEADS)
def test_prefix_tuning_changes_the_logits(family: str, auto_class: str, task_type: str) -> None:
    from peft import PrefixTuningConfig, TaskType, get_peft_model

    ids = torch.arange(4, 14).reshape(2, 5)
    mask = torch.ones_like(ids)
    model = get_peft_model(
        tiny(family, auto_class), PrefixTuningConfig(task_type=TaskType[task_type], num_virtual_tokens=4)
    )
    generator = torch.Generator().manual_seed(1)
    for p in model.parameters():
        if p.requires_grad:  # the prefix: random, so that it has something to say
            p.data = torch.randn(p.shape, generator=generator)
    with torch.no_grad():  # the same base, seeded alike (peft's disable_adapter() fails here)
        prefixed = model(input_ids=ids, attention_mask=mask).logits
        plain = tiny(family, auto_class)(input_ids=ids, attention_mask=mask).logits
    assert prefixed.shape == plain.shape
    assert (prefixed - plain).abs().max() > 1e-3, "the prefix did not reach the attention"
    # and it trains: the prefix gets a gradient
    model(input_ids=ids, attention_mask=mask).logits.float().pow(2).mean().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(g is not None and g.abs().sum() > 0 for g in grads)
