"""Tag schemes of token data: which one a tag set uses, IOB1 made IOB2, ill-formed sequences
counted, and the entities (spans) of a sentence's tags as seqeval finds them in strict mode.

* IOB2: every entity starts with ``B-``; ``I-`` continues one of the same type.
* IOB1: ``I-`` starts an entity, ``B-`` only where two of one type touch. Repaired to IOB2.
* IOBES: ``S-`` a one-word entity, ``B-``/``I-``/``E-`` a longer one.
* plain: tags without entity prefixes (part of speech): scored per word only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

IOB2, IOB1, IOBES, PLAIN = "IOB2", "IOB1", "IOBES", "plain"
OUTSIDE = "O"


def split_tag(tag: str) -> tuple[str, str]:
    """("B", "PER") for "B-PER"; ("", tag) for a tag without a prefix ("O", "NOUN")."""
    if len(tag) > 2 and tag[1] == "-" and tag[0] in "BIES":
        return tag[0], tag[2:]
    return "", tag


def detect(sentences: Sequence[Sequence[str]]) -> str:
    """The scheme of these tag sequences. IOB1 when most entities start with ``I-``."""
    prefixes = {split_tag(t)[0] for s in sentences for t in s}
    if not prefixes - {""}:
        return PLAIN
    if prefixes & {"E", "S"}:
        return IOBES
    starts_with_i = starts = 0
    for tags in sentences:
        previous = ""
        for tag in tags:
            prefix, kind = split_tag(tag)
            if prefix == "B" or (prefix == "I" and split_tag(previous) not in (("B", kind), ("I", kind))):
                starts += 1
                starts_with_i += prefix == "I"
            previous = tag
    return IOB1 if starts and starts_with_i * 2 > starts else IOB2


def to_iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 (or an IOB2 sequence with a stray ``I-``) as IOB2: an ``I-X`` that does not
    continue an X starts one."""
    out: list[str] = []
    for tag in tags:
        prefix, kind = split_tag(tag)
        before, before_kind = split_tag(out[-1]) if out else ("", "")
        continues = before in ("B", "I") and before_kind == kind
        out.append(f"B-{kind}" if prefix == "I" and not continues else tag)
    return out


def ill_formed(tags: Sequence[str], scheme: str) -> bool:
    """Whether a gold sequence breaks its scheme (an entity that does not start or end right)."""
    if scheme == IOB2:
        return to_iob2(tags) != list(tags)
    if scheme != IOBES:
        return False
    open_kind = None
    for tag in tags:
        prefix, kind = split_tag(tag)
        continues = prefix in ("I", "E")
        if (continues and open_kind != kind) or (not continues and open_kind is not None):
            return True
        open_kind = kind if prefix in ("B", "I") else None
    return open_kind is not None


def entities(sentences: list[list[str]], scheme: str) -> list[set[tuple[str, int, int]]]:
    """Each sentence's entities as (type, start word, end word exclusive), seqeval's strict
    reading (a predicted ``I-X`` that starts nothing is no entity). None for plain tags."""
    from seqeval.scheme import IOB2 as SeqIOB2
    from seqeval.scheme import IOBES as SeqIOBES
    from seqeval.scheme import Entities

    found: list[set[tuple[str, int, int]]] = [set() for _ in sentences]
    if scheme == PLAIN:
        return found
    for sentence in Entities(sentences, SeqIOBES if scheme == IOBES else SeqIOB2).entities:
        for entity in sentence:
            found[entity.sent_id].add((entity.tag, entity.start, entity.end))
    return found


def entity_report(gold: list[list[str]], predicted: list[list[str]], scheme: str) -> dict[str, Any]:
    """seqeval's strict report: micro and macro precision/recall/F1 and the per-type table."""
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2 as SeqIOB2
    from seqeval.scheme import IOBES as SeqIOBES

    report = classification_report(
        gold, predicted, mode="strict", scheme=SeqIOBES if scheme == IOBES else SeqIOB2,
        output_dict=True, zero_division=0,
    )  # fmt: skip
    per_type = {
        kind: {"precision": float(v["precision"]), "recall": float(v["recall"]), "f1": float(v["f1-score"]),
               "support": int(v["support"])}
        for kind, v in report.items() if not kind.endswith(" avg")
    }  # fmt: skip
    micro, macro = report.get("micro avg", {}), report.get("macro avg", {})
    return {
        "entity_f1": float(micro.get("f1-score", 0.0)),
        "entity_precision": float(micro.get("precision", 0.0)),
        "entity_recall": float(micro.get("recall", 0.0)),
        "entity_macro_f1": float(macro.get("f1-score", 0.0)),
        "per_entity": per_type,
    }
