"""Sentence pairs get a separator token between their texts, whatever post-processor the
tokenizer had, and keep it through save and reload (on tiny word-level tokenizers: no files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from backend.text_pairs import separate_pairs

VOCAB = {"[UNK]": 0, "<eos>": 1, "[SEP]": 2, "[CLS]": 3, "a": 4, "film": 5, "it": 6, "was": 7, "good": 8}
SINGLE, PAIR = [VOCAB["a"], VOCAB["film"]], [VOCAB["it"], VOCAB["was"], VOCAB["good"]]
CONCATENATE = processors.TemplateProcessing(single="$A", pair="$A $B:1")  # SmolLM2's converted one
POST_PROCESSORS: dict[str, Any] = {
    "none": None,
    "byte-level": processors.ByteLevel(trim_offsets=False),  # GPT-2's: offsets only
    "template": CONCATENATE,
    "sequence": processors.Sequence([processors.ByteLevel(trim_offsets=False), CONCATENATE]),
}


def tokenizer(post_processor: Any, **special: str) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if post_processor is not None:
        tok.post_processor = post_processor
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", model_input_names=["input_ids", "attention_mask"], **special
    )


@pytest.mark.parametrize("kind", list(POST_PROCESSORS))
def test_a_decoder_tokenizer_gets_its_eos_between_the_texts_and_keeps_it_saved(
    kind: str, tmp_path: Path
) -> None:
    shipped = tokenizer(POST_PROCESSORS[kind], eos_token="<eos>", pad_token="<eos>")
    assert shipped("a film", "it was good")["input_ids"] == SINGLE + PAIR  # the texts run together
    tok = separate_pairs(shipped)
    assert tok("a film", "it was good")["input_ids"] == [*SINGLE, VOCAB["<eos>"], *PAIR]
    assert tok("a film")["input_ids"] == SINGLE  # one text: as before
    assert "token_type_ids" not in tok("a film", "it was good")  # LLaMA-type models take none
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again("a film", "it was good")["input_ids"] == [*SINGLE, VOCAB["<eos>"], *PAIR]
    # truncation counts the separator: longest text first, the separator kept
    cut = tok("a film", "it was good", truncation=True, max_length=4)["input_ids"]
    assert cut == [*SINGLE[:1], VOCAB["<eos>"], *PAIR[:2]]


def test_a_sep_token_is_preferred_to_eos() -> None:
    tok = separate_pairs(tokenizer(None, eos_token="<eos>", sep_token="[SEP]"))
    assert tok("a film", "it was good")["input_ids"] == [*SINGLE, VOCAB["[SEP]"], *PAIR]


def test_a_tokenizer_that_separates_pairs_itself_is_left_alone() -> None:
    bert = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
    )
    shipped = tokenizer(bert, sep_token="[SEP]")
    assert separate_pairs(shipped) is shipped
