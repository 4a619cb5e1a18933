"""Turn a GGUF checkpoint into a plain transformers folder (config, tokenizer, safetensors).

transformers reads GGUF files itself (``gguf_file=``, with the ``gguf`` package), but it
dequantizes every tensor and rebuilds the tokenizer from the file's vocabulary on each load:
about 30 s for SmolLM2-135M on a small CPU. Saved once as safetensors, the same weights load in
a second or two. Dequantizing gives the quantized values back in float32: no precision
returns, so the model is exactly as good as the quantized file (the model card says so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Written beside the converted weights: they are not the hub's originals, and the model card says so.
MARKER = "converted_from_gguf.json"


def fix_special_tokens(tokenizer: Any, config: Any) -> None:
    """Make the tokenizer's eos and pad tokens the ones the model's config names, and give
    the config a pad id.

    A decoder's sequence-classification head reads the last token that is not padding, which
    it finds by ``config.pad_token_id``; without one it refuses batches of more than one row.
    The GGUF metadata of SmolLM2 also names ``<|im_start|>`` as the tokenizer's eos where the
    config (and the original hub tokenizer) has ``<|im_end|>``: the config's ids win.
    """
    eos_id = getattr(config, "eos_token_id", None)
    if isinstance(eos_id, int):
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos_id)
    if tokenizer.pad_token is None:
        pad_id = getattr(config, "pad_token_id", None)
        pad_id = pad_id if isinstance(pad_id, int) else eos_id
        if isinstance(pad_id, int):
            tokenizer.pad_token = tokenizer.convert_ids_to_tokens(pad_id)
        else:
            tokenizer.pad_token = tokenizer.eos_token
    config.pad_token_id = tokenizer.pad_token_id


def _gguf_bool(gguf_path: Path, key: str) -> bool | None:
    """A true/false field of the GGUF's metadata, or None when it has none."""
    from gguf import GGUFReader

    field = GGUFReader(gguf_path).fields.get(key)
    return None if field is None or not field.data else bool(field.parts[field.data[0]][0])


def _tokenizer_kwargs(gguf_path: Path) -> dict[str, Any]:
    """What transformers' GGUF tokenizer reader gets wrong for SmolLM2: its Llama tokenizer
    class adds a BOS token and pads on the left by default, where the file says no BOS (as the
    original hub tokenizer does) and the workbench pools and reads rows padded on the right."""
    kwargs: dict[str, Any] = {"padding_side": "right"}
    add_bos = _gguf_bool(gguf_path, "tokenizer.ggml.add_bos_token")
    if add_bos is not None:
        kwargs["add_bos_token"] = add_bos
    return kwargs


def convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    """Write ``gguf_path``'s model (as its causal-LM class, the way hub repos hold it), its
    config and its tokenizer into ``out_dir``, weights dequantized to float32 safetensors."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    folder, name = str(gguf_path.parent), gguf_path.name
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the legacy-tokenizer notice says to ignore it for GGUF
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, **_tokenizer_kwargs(gguf_path))
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    finally:
        hf_logging.set_verbosity(verbosity)
    _let_go_of_the_quantizer(model)
    fix_special_tokens(tokenizer, model.config)
    model.generation_config.pad_token_id = model.config.pad_token_id
    model.save_pretrained(str(out_dir), safe_serialization=True)
    tokenizer.save_pretrained(str(out_dir))
    (Path(out_dir) / MARKER).write_text(json.dumps({"gguf_file": name}, indent=2))


def _let_go_of_the_quantizer(model: Any) -> None:
    """transformers 5 loads a GGUF through a quantizer. For architectures its new path knows,
    with the ``kernels`` package, it keeps weights in GGUF blocks; otherwise (Llama on 5.23, or
    no kernel) it dequantizes every tensor while loading, as transformers 4 did. The model then
    refuses ``save_pretrained`` although its weights are plain float tensors: the quantizer
    is dropped, once nothing is left in blocks."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:  # transformers 4: no quantizer
        return
    dequantized = getattr(quantizer.quantization_config, "dequantize", False)
    in_blocks = {} if dequantized else getattr(quantizer, "quantized", {})
    if in_blocks or not all(p.dtype.is_floating_point for p in model.parameters()):
        raise RuntimeError(f"the GGUF loaded with {len(in_blocks)} tensors left in quantized blocks")
    quantizer.remove_quantization_config(model)


def converted_from_gguf(folder: str | Path) -> bool:
    """Whether ``folder`` holds weights :func:`convert_gguf` wrote (not a hub download)."""
    return (Path(folder) / MARKER).is_file()
