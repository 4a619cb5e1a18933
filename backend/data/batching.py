"""Tokenize once, then batch with dynamic padding (pad each batch to its longest row).

Padding to a fixed max length is the tutorial recipe and costs ~3.8x on SST-2 (BASELINE.md).
Grouping rows of similar length into a batch cuts the padding again (~2.8x fewer padded
tokens on SST-2): training uses transformers' length-grouped batches (shuffled mega-batches
sorted inside) in random order, evaluation sorts fully and puts rows back in place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from backend.data.prepare import Split
from backend.tasks import registry as tasks
from backend.tasks.base import Task

IGNORE = -100  # a position without a label (transformers' ignore index)

MEGA_BATCHES = 4  # batches per length-sorted mega-batch of a training epoch (see below)
SEARCH_MEGA_BATCHES = 50  # ... of the learning-rate search: transformers' default


def length_grouped_order(
    lengths: list[int], batch_size: int, gen: torch.Generator, mega_batches: int = MEGA_BATCHES
) -> list[int]:
    """Rows of similar length batched together, the batches in random order.

    transformers' recipe (``get_length_grouped_indices``, the ``LengthGroupedSampler``'s order)
    permutes the rows, sorts mega-batches by length and puts the longest batch first (an
    out-of-memory shows at once, not late). What was measured on SST-2 (2,000 rows,
    3 seeds, bench/SPEED.md):

    * Mega-batches of 4 batches, not transformers' 50 (15 for 2,000 rows): they mix lengths
      more, and kept prefix tuning and IA3 within 0.5 points of random batches on SST-2 (at
      15: -1.5 and -1.4 points, 3 seeds), at more padding: 37% of the tokens against 16% at
      15 and 67% in random batches, which costs full fine-tuning 25% (17.2 s/epoch against
      13.8 at 15, one sitting; bench/speed_mega_batch_runs.md, bench/SPEED.md).
    * The learning-rate search keeps transformers' size (``SEARCH_MEGA_BATCHES``): its rounds
      are a few dozen quarter-size batches, and with mega-batches of 4 they moved LoRA's
      held-out loss on SST-2 less (at best 0.69 to 0.65 over 4 seeds, against 0.50 at 50), so
      on seed 0 it took 1e-2, whose run ended at 0.761 (tests/integration/test_sst2.py; 3e-3
      at 50, on all 4 seeds).
    * The batches are shuffled: the recipe leaves each mega-batch sorted longest first, so an
      epoch swept from long to short rows once per mega-batch. The longest batch stays first
      and the one short batch stays last, where it was.
    """
    from transformers.trainer_pt_utils import get_length_grouped_indices

    if not lengths:
        return []
    mult = max(1, min(len(lengths) // (batch_size * 4), mega_batches))  # tiny sets: as the recipe
    order = get_length_grouped_indices(lengths, batch_size, mega_batch_mult=mult, generator=gen)
    if len(order) <= batch_size:
        return order
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    tail = [batches.pop()] if len(batches[-1]) < batch_size else []
    # A short batch can only sit last: index_batches cuts the flat order every batch_size rows.
    middle = [batches[1 + j] for j in torch.randperm(len(batches) - 1, generator=gen).tolist()]
    return [i for batch in [*batches[:1], *middle, *tail] for i in batch]


def pad_values(tokenizer: Any, row: dict[str, list[int]]) -> dict[str, int] | None:
    """What ``tokenizer.pad`` pads each of ``row``'s keys with; None for a key it is not known
    for (then ``tokenizer.pad`` itself collates)."""
    known = {
        "input_ids": tokenizer.pad_token_id,
        "attention_mask": 0,
        "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0),
    }
    if any(known.get(key) is None for key in row):
        return None
    return {key: known[key] for key in row}


def pad_longest(
    rows: list[dict[str, list[int]]], values: dict[str, int], left: bool
) -> dict[str, torch.Tensor]:
    """``tokenizer.pad(rows, padding="longest")``, about 10x faster.

    The tokenizer's pad goes through its generic Python path: 0.6 ms for a batch of 32 SST-2
    rows, against 0.06 ms here, per training step (1.5% of a top-2-layers step over cached
    states). Equal to it for every key ``pad_values`` knows (tested), on either padding side.
    """
    longest = max(len(row["input_ids"]) for row in rows)
    out = {}
    for key, value in values.items():
        padded = np.full((len(rows), longest), value, dtype=np.int64)
        for i, row in enumerate(rows):
            seq = row[key]
            if left:
                padded[i, longest - len(seq) :] = seq
            else:
                padded[i, : len(seq)] = seq
        out[key] = torch.from_numpy(padded)
    return out


class Encoded:
    """A tokenized split: lists of token ids (unpadded) + labels, encoded by the split's task
    (a per-token task's rows also carry a ``labels`` list: a tag per word's first sub-word)."""

    def __init__(self, tokenizer: Any, split: Split, max_length: int, task: Task | None = None) -> None:
        self.task = task or tasks.get(None)
        self.features = self.task.encode(tokenizer, split.texts, split.pairs, split.labels, max_length)
        self.labels = list(split.labels)
        self.tokenizer = tokenizer

    def truth(self) -> np.ndarray:
        """The targets as the task's metrics take them."""
        return self.task.truth(self.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices: list[int]) -> Encoded:
        """The rows ``indices`` as their own Encoded, without tokenizing again."""
        part = object.__new__(Encoded)
        part.features = [self.features[i] for i in indices]
        part.labels = [self.labels[i] for i in indices]
        part.tokenizer = self.tokenizer
        part.task = self.task
        return part

    @property
    def lengths(self) -> list[int]:
        return [len(f["input_ids"]) for f in self.features]

    def by_length(self) -> list[int]:
        """Row indices shortest first: one pass with no gradients may take rows in any order."""
        lengths = self.lengths
        return sorted(range(len(self)), key=lengths.__getitem__)

    def batch(self, indices: list[int], pad_to: int | None = None) -> dict[str, torch.Tensor]:
        """Collate rows ``indices``; ``pad_to`` forces a fixed length (benchmarks only)."""
        rows = [self.features[i] for i in indices]
        inputs = [{k: v for k, v in row.items() if k not in self.task.row_keys} for row in rows]
        left = self.tokenizer.padding_side == "left"
        values = pad_values(self.tokenizer, inputs[0]) if inputs and pad_to is None else None
        if values is not None:
            out = pad_longest(inputs, values, left)
        else:
            kwargs: dict[str, Any] = {"padding": "longest", "return_tensors": "pt"}
            if pad_to is not None:
                kwargs = {"padding": "max_length", "max_length": pad_to, "return_tensors": "pt"}
            out = dict(self.tokenizer.pad(inputs, **kwargs))
        # the task types and pads its own targets (class ids, scores, a tag per token)
        return self.task.collate(out, rows, [self.labels[i] for i in indices], left)

    def train_order(
        self, batch_size: int, seed: int, group_by_length: bool = True, mega_batches: int = MEGA_BATCHES
    ) -> list[int]:
        """One epoch's row order, fixed by ``seed`` (a resumed run replays it exactly)."""
        gen = torch.Generator().manual_seed(seed)
        if not group_by_length:
            return torch.randperm(len(self), generator=gen).tolist()
        return length_grouped_order(self.lengths, batch_size, gen, mega_batches)

    def index_batches(
        self,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        group_by_length: bool = False,
        mega_batches: int = MEGA_BATCHES,
    ) -> Iterator[list[int]]:
        """Row indices of each batch: a training epoch's order, or every row (sorted or not)."""
        if shuffle:
            order = self.train_order(batch_size, seed, group_by_length, mega_batches)
        else:
            order = self.by_length() if group_by_length else list(range(len(self)))
        for i in range(0, len(order), batch_size):
            yield order[i : i + batch_size]

    def batches(
        self,
        batch_size: int,
        shuffle: bool,
        seed: int = 0,
        pad_to: int | None = None,
        group_by_length: bool = False,
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Collated batches in :meth:`index_batches` order."""
        for rows in self.index_batches(batch_size, shuffle, seed, group_by_length):
            yield self.batch(rows, pad_to)

    def num_batches(self, batch_size: int) -> int:
        return -(-len(self) // batch_size)
