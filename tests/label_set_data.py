"""Synthetic label-set data for mechanics tests: short texts whose words say their labels (zero,
one or two of joy, anger, fear), seeded, so a tiny model has something learnable and every way
a file holds label sets can be written from it."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

LABELS = ("anger", "fear", "joy")
WORDS = {"joy": ["happy", "glad", "great"], "anger": ["furious", "mad", "rage"], "fear": ["scared", "afraid"]}
FILLER = ["the", "day", "was", "and", "then", "it", "felt", "so"]


def label_sets(n: int, seed: int) -> list[tuple[str, list[str]]]:
    """``n`` texts, each with one label (most), two labels (a fifth) or none (a tenth)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        size = 0 if i % 10 == 9 else (2 if i % 5 == 1 else 1)
        labels = sorted(rng.sample(LABELS, size))
        words = [rng.choice(FILLER) for _ in range(3)] + [rng.choice(WORDS[label]) for label in labels]
        rng.shuffle(words)
        rows.append((" ".join(words), labels))
    return rows


def write_joined(
    path: Path, rows: list[tuple[str, list[str]]], sep: str = ";", column: str = "labels"
) -> Path:
    """A CSV whose label column joins the names by ``sep`` (a row without labels: "none" would be a
    label, so such rows are left out: an empty cell is a missing label)."""
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", column])
        writer.writerows((text, sep.join(labels)) for text, labels in rows if labels)
    return path


def write_lists(path: Path, rows: list[tuple[str, list[str]]]) -> Path:
    """JSONL with a list of labels per row (an empty list: no label)."""
    path.write_text("".join(json.dumps({"text": text, "labels": labels}) + "\n" for text, labels in rows))
    return path


def write_binary(path: Path, rows: list[tuple[str, list[str]]], extra: dict[str, str] | None = None) -> Path:
    """A CSV with one 0/1 column per label (and ``extra`` columns of one value)."""
    extra = extra or {}
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", *LABELS, *extra])
        writer.writerows(
            [text, *(int(label in labels) for label in LABELS), *extra.values()] for text, labels in rows
        )
    return path
