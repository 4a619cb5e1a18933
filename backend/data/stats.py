"""The overview of a dataset the UI shows: counts, a preview, text and token lengths.

``dataset_stats`` reads a file once and summarises it; ``summarize`` does the same for
a table already in memory. Counts and lengths cover the usable rows, i.e. what
training sees once invalid rows are dropped.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from backend.cells import is_missing
from backend.data.check import usable_rows
from backend.data.limits import check_row_count
from backend.data.mapping import ColumnMapping, resolve_mapping
from backend.data.read import read_table
from backend.data.sampling import sample_indices
from backend.tasks import registry as tasks

PREVIEW_ROWS = 5
PERCENTILES = (50, 90, 95, 99)
HISTOGRAM_BINS = 20
# Token lengths of at most this many rows (a seeded sample): tokenizing a million-row file
# would hold the web request for minutes, and 2,000 rows pin the percentiles well enough.
TOKEN_SAMPLE_ROWS = 2_000


def dataset_stats(
    path: str | Path,
    *,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = None,
    tokenizer: Any = None,
    max_rows: int | None = None,
) -> dict[str, Any]:
    """Overview of a table for the UI; DataError only if it cannot be read or mapped
    (or has more than ``max_rows`` rows).

    Keys: rows, columns, mapping {text, text_pair, label}, task (what "auto" would train),
    task_label and label_text (its words), label_counts {name: count} (a score's: bins),
    label_chart (the task's chart of the labels: title, x, y, bars [{name, count}] in order),
    invalid_rows (rows with a missing mapped cell), preview (first 5
    rows), char_length and token_length ({p50, p90, p95, p99, max}; token
    lengths need a Hugging Face tokenizer, else None). Counts and lengths cover
    usable rows. token_histogram: [{start, end, count}] bins of token lengths (None
    without a tokenizer). Token lengths come from a seeded sample of at most
    ``TOKEN_SAMPLE_ROWS`` rows: token_lengths_sampled is its size when it
    is a sample, else None.
    """
    name = Path(path).name
    df = read_table(path)
    check_row_count(len(df), max_rows, name)
    mapping = resolve_mapping(df, name, text_column, text_pair_column, label_column)
    return summarize(df, mapping, name, tokenizer)


def summarize(
    df: pd.DataFrame,
    mapping: ColumnMapping,
    source_name: str,
    tokenizer: Any = None,
    token_sample: int = TOKEN_SAMPLE_ROWS,
) -> dict[str, Any]:
    """The UI's overview of a table; ``dataset_stats`` documents the keys.

    Label counts and lengths cover usable rows only, i.e. what training sees
    once invalid rows are dropped. Token lengths cover a seeded sample of at most
    ``token_sample`` of them (``token_lengths_sampled`` says how many when it is one).
    """
    usable = usable_rows(df, mapping, source_name)
    task = tasks.resolve(None, usable.names, usable.numeric, usable.reader.cells)
    char_lengths = [len(t) for t in usable.texts]
    if usable.pairs is not None:
        char_lengths = [n + len(p) for n, p in zip(char_lengths, usable.pairs, strict=True)]
    preview = df.head(PREVIEW_ROWS).to_dict("records")
    picked = sample_indices(len(usable.texts), token_sample)
    texts = [usable.texts[i] for i in picked]
    pairs = None if usable.pairs is None else [usable.pairs[i] for i in picked]
    token_lengths = _token_lengths(tokenizer, texts, pairs)
    # How many rows the token lengths come from when that is a sample; None: from every row.
    sampled = len(picked) if token_lengths is not None and len(picked) < len(usable.texts) else None
    return {
        "rows": len(df),
        "columns": [str(c) for c in df.columns],
        "mapping": {
            "text": mapping.text,
            "text_pair": mapping.text_pair,
            "label": mapping.label,
        },
        # the task "auto" sees in the label column, and its view of the labels (bins of a score)
        "task": task.key,
        "task_label": task.label,
        "label_text": task.describe_labels(usable.names, usable.numeric),
        "label_counts": task.distribution(usable.names, usable.numeric),
        # the Data tab's chart of the labels, as the task sees them (entities per type, score bins)
        "label_chart": task.label_chart(usable.names, usable.numeric),
        "invalid_rows": usable.dropped,
        "preview": [{str(k): _plain(v) for k, v in row.items()} for row in preview],
        # token data: the first sentences' words, tags and entities, to draw (None: the table shows it)
        "tagged": task.preview(usable.texts[:PREVIEW_ROWS], usable.names[:PREVIEW_ROWS]),
        "char_length": length_summary(char_lengths),
        "token_length": None if token_lengths is None else length_summary(token_lengths),
        # Bins, not the raw lengths: the UI draws a histogram without shipping every row.
        "token_histogram": None if token_lengths is None else histogram(token_lengths),
        "token_lengths_sampled": sampled,
    }


def length_summary(lengths: list[int]) -> dict[str, int]:
    """p50/p90/p95/p99/max of lengths; observed values ("higher"), so all ints."""
    if not lengths:
        return {**{f"p{q}": 0 for q in PERCENTILES}, "max": 0}
    values = np.asarray(lengths)
    summary = {f"p{q}": int(np.percentile(values, q, method="higher")) for q in PERCENTILES}
    summary["max"] = int(values.max())
    return summary


def _token_lengths(tokenizer: Any, texts: list[str], pairs: list[str] | None) -> list[int] | None:
    """Tokens per usable row (None without a tokenizer)."""
    if tokenizer is None:
        return None
    if not texts:
        return []
    # verbose=False: no "longer than the model maximum" warning; that is what we measure
    encoded = tokenizer(texts, pairs, truncation=False, verbose=False)
    return [len(ids) for ids in encoded["input_ids"]]


def histogram(lengths: list[int], bins: int = HISTOGRAM_BINS) -> list[dict[str, int]]:
    """Counts of ``lengths`` in at most ``bins`` equal integer-width bins.

    Each bin is {start, end, count} with ``end`` exclusive; empty bins are kept so a
    chart shows the gaps.
    """
    if not lengths:
        return []
    low, high = min(lengths), max(lengths)
    width = max(1, math.ceil((high - low + 1) / bins))
    counts = Counter((n - low) // width for n in lengths)
    return [
        {"start": low + i * width, "end": low + (i + 1) * width, "count": counts.get(i, 0)}
        for i in range((high - low) // width + 1)
    ]


def _plain(value: object) -> object:
    """A JSON-friendly preview cell: numpy scalars unwrapped, NaN/NA -> None."""
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, str) and is_missing(value):
        return None
    return value
