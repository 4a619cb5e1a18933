"""FastDropout draws masks with torch's law (up to p rounded to 1/65,536), and costs less."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from backend.training.fast_dropout import FastDropout, use_fast_dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.02])
def test_drop_rate_and_scale_match_torch(p: float) -> None:
    torch.manual_seed(0)
    drop = FastDropout(p).train()
    x = torch.ones(400, 2500)  # 1M elements: the rate's standard error is under 0.0005
    out = drop(x)
    dropped = (out == 0).float().mean().item()
    assert abs(dropped - p) < 0.002
    kept = out[out != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1 / (1 - p)))
    # Every lane of the 64-bit draws is fair, not only on average (a biased lane shows here).
    lanes = (out.reshape(-1, 4) == 0).float().mean(0)
    assert (lanes - p).abs().max().item() < 0.004


def test_gradient_flows_through_the_kept_elements_only() -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 384, requires_grad=True)
    out = FastDropout(0.3).train()(x)
    out.sum().backward()
    assert x.grad is not None
    expected = (out != 0).float() / 0.7
    assert torch.allclose(x.grad, expected)


def test_eval_mode_bf16_and_seeded_reproducibility() -> None:
    drop = FastDropout(0.1)
    x = torch.randn(8, 16, 384).bfloat16()
    assert drop.eval()(x) is x
    drop.train()
    torch.manual_seed(3)
    a = drop(x)
    torch.manual_seed(3)
    b = drop(x)
    assert a.dtype == torch.bfloat16 and torch.equal(a, b)
    assert not torch.equal(a, drop(x))  # a new draw every call


def test_swap_keeps_the_model_and_its_state() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.2), nn.Sequential(nn.Dropout(0.1)), nn.ReLU())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    assert use_fast_dropout(model) == 2
    assert isinstance(model[1], FastDropout) and model[1].p == 0.2 and model[2][0].p == 0.1
    assert model.state_dict().keys() == before.keys()
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())
    assert use_fast_dropout(model) == 0  # already swapped
