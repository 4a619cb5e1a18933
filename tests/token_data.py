"""Synthetic token data for mechanics tests: sentences with people and places in IOB2, seeded,
so a tiny model has something learnable and every file format can be written from it."""

from __future__ import annotations

import json
import random
from pathlib import Path

PEOPLE = [["John", "Smith"], ["Mary"], ["Ada", "Lovelace"], ["Bob"]]
PLACES = [["Paris"], ["New", "York"], ["Rome"], ["Lagos"]]
FILLER = ["I", "met", "saw", "today", "in", "the", "park", "yesterday", "with", "and", "."]


def sentences(n: int, seed: int) -> list[tuple[list[str], list[str]]]:
    """``n`` sentences of filler words, a person and a place, tagged IOB2 (PER, LOC)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words: list[str] = []
        tags: list[str] = []
        for kind, names in (("PER", PEOPLE), ("LOC", PLACES)):
            filler = [rng.choice(FILLER) for _ in range(rng.randint(1, 3))]
            words += filler
            tags += ["O"] * len(filler)
            name = rng.choice(names)
            words += name
            tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(name) - 1)
        rows.append((words, tags))
    return rows


def write_jsonl(
    path: Path, rows: list[tuple[list[str], list[str]]], words: str = "tokens", tags: str = "tags"
) -> Path:
    path.write_text("".join(json.dumps({words: w, tags: t}) + "\n" for w, t in rows))
    return path


def write_conll(path: Path, rows: list[tuple[list[str], list[str]]]) -> Path:
    lines = ["-DOCSTART- O", ""]
    for words, tags in rows:
        lines += [f"{w}\t{t}" for w, t in zip(words, tags, strict=True)] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path
