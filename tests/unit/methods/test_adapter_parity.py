"""Issue 45: our bottleneck adapters compute what AdapterHub's did, from the same weights.

``tests/fixtures/adapterhub`` holds what AdapterHub 1.3.0 computed (its ``record.py`` says how):
a tiny BERT and a tiny Llama, each preset's adapter as AdapterHub saved it, with random weights,
and every hidden state with the adapter active. Here the base loads with plain transformers, the
saved adapter is read onto our module (``backend.methods.adapterhub_layout``) and every hidden
state must match AdapterHub's to 1e-5: a user's old numbers do not move. No ``adapters`` import.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from backend.methods import bottleneck
from backend.methods.adapterhub_layout import read

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "adapterhub"
CASES = ["houlsby", "pfeiffer", "parallel", "houlsby-top1"]
TOLERANCE = 1e-5


def hidden_states(model: torch.nn.Module, arch: str) -> list[torch.Tensor]:
    model.eval()
    with torch.no_grad():
        return list(
            model(
                **load_file(str(FIXTURE / arch / "inputs.safetensors")), output_hidden_states=True
            ).hidden_states
        )


def recorded(path: Path) -> list[torch.Tensor]:
    saved = load_file(str(path))
    return [saved[f"layer_{i}"] for i in range(len(saved))]


def base(arch: str) -> torch.nn.Module:
    from transformers import AutoModel

    return AutoModel.from_pretrained(FIXTURE / arch / "base")


def largest_gap(ours: list[torch.Tensor], theirs: list[torch.Tensor]) -> float:
    assert len(ours) == len(theirs)
    return max((a - b).abs().max().item() for a, b in zip(ours, theirs, strict=True))


@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_the_plain_base_computes_what_it_did(arch: str) -> None:
    """Sets apart a change of the base (a transformers upgrade) from one of the adapter."""
    assert (
        largest_gap(hidden_states(base(arch), arch), recorded(FIXTURE / arch / "base_outputs.safetensors"))
        < 1e-5
    )


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("arch", ["bert", "llama"])
def test_our_adapter_reproduces_adapterhubs_outputs(arch: str, case: str) -> None:
    cfg, state = read(FIXTURE / arch / case)
    model = base(arch)
    adapters = bottleneck.attach(model, cfg)
    adapters.load_state_dict(state)  # strict: every site has its weights, and nothing else
    theirs = recorded(FIXTURE / arch / case / "outputs.safetensors")
    assert largest_gap(hidden_states(model, arch), theirs) < TOLERANCE
    # the adapter moves the hidden states: a module that ignored it would fail the line above
    assert largest_gap(theirs, recorded(FIXTURE / arch / "base_outputs.safetensors")) > 0.5


def test_the_presets_read_as_the_unified_view_says() -> None:
    """Where, how and how much: Houlsby on both sublayers, Pfeiffer after the FFN's residual and
    norm, the parallel adapter beside the FFN at scaling 4; a top-layers cut keeps the top."""
    expected = {
        "houlsby": (
            [bottleneck.ATTENTION, bottleneck.FFN],
            bottleneck.SEQUENTIAL,
            bottleneck.OUTPUT,
            "swish",
            1.0,
        ),
        "pfeiffer": ([bottleneck.FFN], bottleneck.SEQUENTIAL, bottleneck.ADDED, "relu", 1.0),
        "parallel": ([bottleneck.FFN], bottleneck.PARALLEL, bottleneck.OUTPUT, "relu", 4.0),
    }
    for name, (sites, insertion, reads, activation, scaling) in expected.items():
        cfg, _ = read(FIXTURE / "bert" / name)
        assert (cfg.sites, cfg.insertion, cfg.activation, cfg.scaling, cfg.size) == (
            sites, insertion, activation, scaling, 8)  # fmt: skip
        assert cfg.reads == reads or insertion == bottleneck.PARALLEL
        ours = bottleneck.preset(name, 8)
        assert (ours.sites, ours.insertion, ours.activation, ours.scaling) == (
            sites,
            insertion,
            activation,
            scaling,
        )
    assert read(FIXTURE / "bert" / "houlsby-top1")[0].layers == [1]


def test_our_own_files_reload_to_the_same_outputs(tmp_path: Path) -> None:
    """``save`` then ``load`` on a fresh base: the same hidden states."""
    cfg, state = read(FIXTURE / "llama" / "pfeiffer")
    model = base("llama")
    bottleneck.attach(model, cfg).load_state_dict(state)
    bottleneck.save(model, tmp_path)
    again = bottleneck.load(base("llama"), tmp_path)
    assert largest_gap(hidden_states(again, "llama"), hidden_states(model, "llama")) == 0.0


def test_an_option_we_do_not_compute_is_refused_by_name() -> None:
    from backend.methods.adapterhub_layout import config

    bn = {"mh_adapter": False, "output_adapter": True, "reduction_factor": 4, "non_linearity": "relu",
          "ln_after": True, "use_gating": True}  # fmt: skip
    with pytest.raises(ValueError, match="uses ln_after, use_gating, which the workbench"):
        config(bn, 32, [0])
