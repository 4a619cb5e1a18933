"""Sentence pairs: a tokenizer that puts a separator between the two texts of a pair.

Encoders join a pair with their own special tokens ([SEP], </s></s>); many decoder tokenizers
(GPT-2, SmolLM/LLaMA-3 style) just concatenate the two texts, so "a film" + "it was good"
reads as one sentence and the model cannot tell where the second begins.
"""

from __future__ import annotations

import json
from typing import Any


def separate_pairs(tok: Any) -> Any:
    """``tok``, or where ``tok(text, pair)`` puts nothing between the texts, a copy that does.

    The separator is the tokenizer's sep token, else its eos token: a special token, so it
    never merges with the text beside it nor reads as a newline inside either text, and
    decoders met it between documents in pre-training. eos is often also the pad token:
    harmless, as the classification head reads the rightmost non-pad token. The copy is a plain
    ``PreTrainedTokenizerFast`` with the separator in its pair template, so the run's saved
    tokenizer loads with it anywhere (``LlamaTokenizerFast`` rebuilds that template from
    add_bos/add_eos on load and would drop it from exports).
    """
    if not tok.is_fast or separates_pairs(tok):
        return tok
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    sep = tok.sep_token or tok.eos_token
    state = json.loads(tok.backend_tokenizer.to_str())
    state["post_processor"] = pair_template(state.get("post_processor"), sep, tok.convert_tokens_to_ids(sep))
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(state)),
        padding_side=tok.padding_side,
        truncation_side=tok.truncation_side,
        model_max_length=tok.model_max_length,
        model_input_names=tok.model_input_names,  # no token_type_ids for a model that takes none
        **tok.special_tokens_map,
    )


def separates_pairs(tok: Any) -> bool:
    """Whether ``tok(text, pair)`` holds more tokens than the two texts alone (a separator)."""
    alone = len(tok("a")["input_ids"]) + len(tok("b", add_special_tokens=False)["input_ids"])
    return len(tok("a", "b")["input_ids"]) > alone


def pair_template(processor: dict[str, Any] | None, sep: str, sep_id: int) -> dict[str, Any]:
    """A tokenizer.json post-processor: ``processor`` with ``sep`` before a pair's second text."""
    token = {"SpecialToken": {"id": sep, "type_id": 0}}
    entry = {"id": sep, "ids": [sep_id], "tokens": [sep]}
    kind = processor["type"] if processor is not None else None
    if processor is not None and kind == "TemplateProcessing":
        pair = processor["pair"]
        at = next(i for i, part in enumerate(pair) if part.get("Sequence", {}).get("id") == "B")
        specials = {**processor["special_tokens"], sep: entry}
        return {**processor, "pair": [*pair[:at], token, *pair[at:]], "special_tokens": specials}
    parts = processor["processors"] if processor is not None and kind == "Sequence" else []
    if any(p["type"] == "TemplateProcessing" for p in parts):  # the template joins the texts: edit it
        edited = [pair_template(p, sep, sep_id) if p["type"] == "TemplateProcessing" else p for p in parts]
        return {"type": "Sequence", "processors": edited}
    template = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, token, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {sep: entry},
    }
    # e.g. GPT-2's ByteLevel (offsets only) stays, then the template adds the separator
    return template if processor is None else {"type": "Sequence", "processors": [processor, template]}
