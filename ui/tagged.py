"""Sentences with their tags drawn in: entities highlighted by type (named-entity data), or a
tag under each word (part of speech). Pure functions of the API's records: words, entities as
word offsets (start, end exclusive) and tags, all computed by the task on the server."""

from __future__ import annotations

import html
import zlib
from typing import Any

from ui.tables import Html

# Soft backgrounds, one per entity type (picked by a stable hash of the type's name)
PALETTE = ("#fde68a", "#bfdbfe", "#bbf7d0", "#fbcfe8", "#ddd6fe", "#fed7aa", "#a5f3fc", "#e5e7eb")
CSS = """
.wb-tagged { line-height: 2.1; }
.wb-ent { border-radius: 4px; padding: 0.1rem 0.3rem; margin: 0 0.1rem; color: #111827; }
.wb-ent-type { font-size: 0.7em; font-weight: 700; margin-left: 0.3rem; text-transform: uppercase; }
.wb-tok { display: inline-block; text-align: center; margin-right: 0.35rem; line-height: 1.2; }
.wb-tok sub { display: block; font-size: 0.68em; color: var(--body-text-color-subdued); }
"""


def colour(kind: str) -> str:
    return PALETTE[zlib.crc32(kind.encode()) % len(PALETTE)]


def sentence_html(item: dict[str, Any]) -> Html:
    """One sentence: ``words`` with its ``entities`` marked, or each word over its tag when the
    tags are ``plain`` (no entities: part of speech)."""
    words = [html.escape(str(w)) for w in item.get("words") or []]
    if item.get("plain"):
        tags = item.get("tags") or [""] * len(words)
        cells = "".join(
            f'<span class="wb-tok">{w}<sub>{html.escape(str(t))}</sub></span>'
            for w, t in zip(words, tags, strict=False)
        )
        return Html(f'<span class="wb-tagged">{cells}</span>')
    starts = {int(e["start"]): e for e in item.get("entities") or []}
    out, i = [], 0
    while i < len(words):
        entity = starts.get(i)
        if entity is None or int(entity["end"]) <= i:
            out.append(words[i])
            i += 1
            continue
        end = min(int(entity["end"]), len(words))
        kind = html.escape(str(entity["type"]))
        out.append(
            f'<mark class="wb-ent" style="background: {colour(str(entity["type"]))}" title="{kind}">'
            f'{" ".join(words[i:end])}<span class="wb-ent-type">{kind}</span></mark>'
        )
        i = end
    return Html(f'<span class="wb-tagged">{" ".join(out)}</span>')
