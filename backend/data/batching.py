"""Tokenize once, then batch with dynamic padding (pad each batch to its longest row).

Padding to a fixed max length is the tutorial recipe and costs ~3.8x on SST-2 (BASELINE.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from backend.data.prepare import Split


class Encoded:
    """A tokenized split: lists of token ids (unpadded) + labels."""

    def __init__(self, tokenizer: Any, split: Split, max_length: int) -> None:
        args = (split.texts, split.pairs) if split.pairs is not None else (split.texts,)
        enc = tokenizer(*args, truncation=True, max_length=max_length)
        self.features = [{k: enc[k][i] for k in enc} for i in range(len(split.texts))]
        self.labels = list(split.labels)
        self.tokenizer = tokenizer

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices: list[int]) -> Encoded:
        """The rows ``indices`` as their own Encoded, without tokenizing again."""
        part = object.__new__(Encoded)
        part.features = [self.features[i] for i in indices]
        part.labels = [self.labels[i] for i in indices]
        part.tokenizer = self.tokenizer
        return part

    def batch(self, indices: list[int], pad_to: int | None = None) -> dict[str, torch.Tensor]:
        """Collate rows ``indices``; ``pad_to`` forces a fixed length (benchmarks only)."""
        rows = [self.features[i] for i in indices]
        kwargs: dict[str, Any] = {"padding": "longest", "return_tensors": "pt"}
        if pad_to is not None:
            kwargs = {"padding": "max_length", "max_length": pad_to, "return_tensors": "pt"}
        out = self.tokenizer.pad(rows, **kwargs)
        out["labels"] = torch.tensor([self.labels[i] for i in indices], dtype=torch.long)
        return dict(out)

    def batches(
        self, batch_size: int, shuffle: bool, seed: int = 0, pad_to: int | None = None
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Yield batches; a seeded shuffle makes an epoch's order reproducible (for resume)."""
        order = list(range(len(self)))
        if shuffle:
            gen = torch.Generator().manual_seed(seed)
            order = torch.randperm(len(self), generator=gen).tolist()
        for i in range(0, len(order), batch_size):
            yield self.batch(order[i : i + batch_size], pad_to)

    def num_batches(self, batch_size: int) -> int:
        return -(-len(self) // batch_size)
