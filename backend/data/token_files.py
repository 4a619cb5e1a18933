"""Token data in the formats people have, read into a table with a list of words and a list
of tags per sentence (the columns ``tokens`` and ``tags``; CoNLL-U gives ``upos``, ``xpos``
and one column per MISC key that holds values, such as ``NER``).

* CoNLL text (``.conll``, ``.iob``, ``.txt``): a word and a tag per line, tab- or
  space-separated (the tag is the last field, the word the first), a blank line between
  sentences, ``-DOCSTART-`` lines skipped. A line whose field count differs from the file's
  is a DataError naming the line.
* CoNLL-U (``.conllu``), read by the ``conllu`` package; multi-word token ranges and empty
  nodes are left out (their words are the rows that carry tags).
* Span JSON Lines as doccano and Label Studio export it (``spans_to_tokens``): a text and
  character spans with labels, made into words and IOB2 tags.

Nothing is written; read errors name the file and the line or row.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from backend.cells import listing
from backend.errors import DataError

CONLL_EXTENSIONS = (".conll", ".iob", ".txt")
CONLLU_EXTENSIONS = (".conllu",)
TOKEN_EXTENSIONS = CONLL_EXTENSIONS + CONLLU_EXTENSIONS
# A word of a span file's text: a run of letters/digits, or one other visible character
# (what CoNLL data calls a token: "Obama", "'s", ",").
_WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]", re.UNICODE)


def read_conll(name: str, lines: list[tuple[int, str]]) -> pd.DataFrame:
    """Sentences of a CoNLL text file: ``tokens`` and ``tags`` per sentence."""
    sentences: list[dict[str, list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    fields: tuple[int, int] | None = None  # the file's field count, and the line that set it
    for number, raw in lines:
        line = raw.rstrip("\r\n")
        if line.startswith("-DOCSTART-") or not line.strip():
            if words:
                sentences.append({"tokens": words, "tags": tags})
                words, tags = [], []
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) < 2:
            raise DataError(
                f"{name}: line {number} has {len(parts)} field(s) ({line.strip()!r}); a CoNLL file needs a "
                "word and a tag per line, separated by a tab or spaces, and a blank line between sentences."
            )
        if fields is None:
            fields = (len(parts), number)
        elif len(parts) != fields[0]:
            raise DataError(
                f"{name}: line {number} has {len(parts)} columns where {fields[0]} were expected "
                f"(line {fields[1]} has {fields[0]}): {line.strip()!r}. Every word line needs the same "
                "fields."
            )
        words.append(parts[0].strip())
        tags.append(parts[-1].strip())
    if words:
        sentences.append({"tokens": words, "tags": tags})
    return pd.DataFrame(sentences, columns=["tokens", "tags"], dtype=object)


def read_conllu(name: str, text: str) -> pd.DataFrame:
    """Sentences of a CoNLL-U file: ``tokens``, ``upos``, ``xpos`` and each MISC key with values."""
    import conllu  # deferred: only token files need it

    try:
        sentences = conllu.parse(text)
    except conllu.exceptions.ParseException as exc:
        raise DataError(f"{name}: not valid CoNLL-U ({exc}).") from None
    rows: list[dict[str, Any]] = []
    for sentence in sentences:
        words = [t for t in sentence if isinstance(t["id"], int)]  # no ranges (1-2), no empty nodes (1.1)
        if not words:
            continue
        row: dict[str, Any] = {
            "tokens": [t["form"] for t in words],
            "upos": [t["upos"] or "_" for t in words],
            "xpos": [t["xpos"] or "_" for t in words],
        }
        for key in sorted({k for t in words for k in (t["misc"] or {})}):
            row[key] = [str((t["misc"] or {}).get(key) or "O") for t in words]
        rows.append(row)
    if not rows:
        raise DataError(f"{name}: no sentences found; a CoNLL-U file has one word per line in 10 columns.")
    return pd.DataFrame(rows, dtype=object)


def is_span_table(df: pd.DataFrame) -> bool:
    """Whether a JSON Lines table is doccano's or Label Studio's span export."""
    columns = set(map(str, df.columns))
    return (
        ({"text", "label"} <= columns and _holds_spans(df["label"]))
        or ("entities" in columns and "text" in columns)
        or {"data", "annotations"} <= columns
    )


def spans_to_tokens(name: str, df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Words and IOB2 tags from texts with character spans, and what to say about spans that
    do not start and end on a word boundary (they are left out, counted in a warning)."""
    rows: list[dict[str, Any]] = []
    missed: list[int] = []
    for index, record in enumerate(df.to_dict("records"), start=1):
        text, spans = _text_and_spans(name, index, record)
        words = [(m.start(), m.end(), m.group()) for m in _WORD_RE.finditer(text)]
        tags = ["O"] * len(words)
        for start, end, label in spans:
            if not 0 <= start < end <= len(text):
                raise DataError(
                    f"{name}: row {index}: the span {start}-{end} ({label!r}) is past the end of its text "
                    f"({len(text)} characters); spans are character offsets into the text."
                )
            inside = [i for i, (s, e, _) in enumerate(words) if s >= start and e <= end]
            if not inside or words[inside[0]][0] != start or words[inside[-1]][1] != end:
                missed.append(index)
                continue
            tags[inside[0]] = f"B-{label}"
            for i in inside[1:]:
                tags[i] = f"I-{label}"
        rows.append({"tokens": [w for _, _, w in words], "tags": tags})
    warnings = []
    if missed:
        warnings.append(
            f"{name}: {len(missed)} span(s) do not start and end on a word boundary and were left out "
            f"(rows {listing(sorted(set(missed)))})."
        )
    return pd.DataFrame(rows, columns=["tokens", "tags"], dtype=object), warnings


def _holds_spans(column: pd.Series) -> bool:
    values = [v for v in column.head(50).tolist() if isinstance(v, list)]
    return bool(values) and all(all(isinstance(s, (list, dict)) for s in v) for v in values)


def _text_and_spans(name: str, index: int, record: dict[str, Any]) -> tuple[str, list[tuple[int, int, str]]]:
    """A record's text and (start, end, label) spans: doccano's ``label: [[s, e, l]]`` or
    ``entities: [{start_offset, end_offset, label}]``, or Label Studio's task JSON."""
    if "data" in record and "annotations" in record:
        text = (record.get("data") or {}).get("text")
        results = [r for a in record.get("annotations") or [] for r in a.get("result") or []]
        raw = [(r["value"].get("start"), r["value"].get("end"), (r["value"].get("labels") or ["?"])[0])
               for r in results if isinstance(r.get("value"), dict)]  # fmt: skip
    elif "entities" in record and isinstance(record.get("entities"), list):
        text = record.get("text")
        raw = [(e.get("start_offset"), e.get("end_offset"), e.get("label")) for e in record["entities"]]
    else:
        text = record.get("text")
        raw = [
            tuple(s) if isinstance(s, list) and len(s) == 3 else (None, None, None)
            for s in record.get("label") or []
        ]
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{name}: row {index} has no text; each span row needs a text and its spans.")
    spans = []
    for start, end, label in raw:
        if not isinstance(start, int) or not isinstance(end, int) or not isinstance(label, str):
            raise DataError(
                f"{name}: row {index}: a span is not [start, end, label] with whole-number offsets and a "
                "label."
            )
        spans.append((start, end, label))
    return text, spans
