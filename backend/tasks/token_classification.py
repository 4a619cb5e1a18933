"""Token classification: a tag per word (named entities, part of speech).

Rows hold words one space apart and their tags likewise (``backend.data.check``). The head is
``AutoModelForTokenClassification``; each word's tag trains on its first sub-word and the
others are left out of the loss (-100). Outputs are per word, padded per sentence. Metrics:
entity precision/recall/F1, micro (primary) and macro, and the per-type table by seqeval in
strict mode, plus word accuracy; a tag set without entities (part of speech) has word
accuracy as its primary metric. Baseline: every word "O" (for part of speech: every word
the most frequent tag). Compare resamples sentences, not words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.catalogue import label_kwargs
from backend.cells import as_list, label_text, listing
from backend.errors import ConfigError, DataError
from backend.knobs import knob
from backend.tasks import tag_schemes as ts
from backend.tasks.base import Cells, Role, Task, chart
from backend.tasks.token_scores import SentenceCounts, counts_metric, ratio_interval
from backend.tasks.token_tags import (
    IGNORE,
    entity_dicts,
    first_subword_labels,
    pad_outputs,
    pad_targets,
    per_tag,
    predicted_tags,
    sentence_frame,
    spans,
    word_tags,
)

if TYPE_CHECKING:
    import torch

# A word of a typed text: a run of letters/digits (with inner hyphens or apostrophes), or one
# other visible character, as CoNLL data splits "Obama's," into words.
WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]", re.UNICODE)


AUTO_SCHEME = "auto"
SCHEMES = (AUTO_SCHEME, ts.IOB2, ts.IOB1, ts.IOBES, ts.PLAIN)


@dataclass(frozen=True)
class TagSettings:
    tag_scheme: str = knob(
        AUTO_SCHEME,
        "Tag scheme",
        "How the tags mark entities. auto: read from the tags (IOB1 is converted to IOB2; tags "
        "without B-/I- prefixes, as part of speech, are scored per word). Name one when auto reads "
        "your tags wrongly; plain scores every tag per word, never as entities.",
        choices=SCHEMES,
        choice_labels=("auto (from the tags)", "IOB2", "IOB1 (made IOB2)", "IOBES", "plain (per word)"),
    )


class TokenClassification(Task):
    key = "token-classification"
    label = "Token classification"
    description = "A tag per word: named entities (IOB2, IOB1, IOBES) or part of speech."
    primary_metric = "entity_f1"
    headline = ("entity_f1", "entity_precision", "entity_recall", "entity_macro_f1", "token_accuracy")
    baseline_label = "every word 'O' (or the most frequent tag)"
    peft_task_type = "TOKEN_CLS"
    per_word = True
    settings_cls = TagSettings
    settings = TagSettings()
    auto_class = "AutoModelForTokenClassification"
    card_output = (
        "logits = getattr(out, 'logits', out)[:, -enc['input_ids'].shape[1]:]  # no virtual tokens\n"
        "tags = logits.argmax(-1)[0]  # a tag per sub-word; a word's tag is its first sub-word's\n"
        "import json\n"
        "names = json.load(open('labels.json'))['id2label']\n"
        "print([names[str(int(t))] for t in tags])\n"
    )

    cells = "a tag per word (token data)"
    roles = (
        Role(
            "tokens", "text", "Tokens column",
            "Column holding each sentence's list of words (token classification).", ("tokens", "words"),
        ),
        Role(
            "tags", "label", "Tags column",
            "Column holding each sentence's list of tags, one per word (token classification).",
            ("tags", "ner_tags", "pos_tags", "upos"),
        ),
    )  # fmt: skip

    def fits(self, names: list[str], numeric: bool) -> bool:
        return True  # the registry offers it for token data only

    def holds(self, text_cells: list[Any], label_cells: list[Any]) -> bool:
        """Token data: the text column holds lists (words) in some row (a list of labels beside a
        text is a label set)."""
        return any(as_list(v) is not None for v in text_cells)

    def read_cells(self, cells: Cells) -> tuple[list[str], list[str] | None, list[str], bool]:
        """Each row's words and tags, checked and joined by single spaces (a word or tag holds no
        whitespace, so the join is undone by ``split(" ")``); no second text."""
        source, text, label = cells.source, cells.text_column, cells.label_column
        texts, names = [], []
        for row, word_cell, tag_cell in zip(cells.rows, cells.texts, cells.labels, strict=True):
            words = _listed(word_cell, source, row, text, "words")
            tags = _listed(tag_cell, source, row, label, "tags (one per word)")
            if not words:
                raise DataError(
                    f"{source}: row {row} is an empty sentence (no words in '{text}'); remove it."
                )
            if len(words) != len(tags):
                raise DataError(
                    f"{source}: row {row} has {len(words)} words in '{text}' but {len(tags)} tags in "
                    f"'{label}'; every word needs exactly one tag."
                )
            for kind, items in (("word", words), ("tag", tags)):
                bad = next((x for x in items if not x or any(c.isspace() for c in x)), None)
                if bad is not None:
                    raise DataError(
                        f"{source}: row {row}: the {kind} {bad!r} is empty or holds whitespace; a {kind} is "
                        "one token without spaces (split it, or mark the gap with another character)."
                    )
            texts.append(" ".join(words))
            names.append(" ".join(tags))
        return texts, None, names, False

    def cell_counts(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Words per tag, the most frequent first."""
        return self.distribution(names, numeric)

    def words(self, text: str) -> str:
        return " ".join(WORD_RE.findall(text))

    def text_of(self, cell: Any) -> str:
        """A list of words (a token file's) as it is; a text split into words."""
        if isinstance(cell, (list, tuple, np.ndarray)):
            return " ".join(w for w in (str(x).strip() for x in cell) if w and " " not in w)
        return self.words(str(cell))

    def normalise(self, names: list[str], source: str) -> tuple[list[str], list[str]]:
        sentences = [n.split(" ") for n in names]
        chosen = self.settings.tag_scheme
        scheme, notes = ts.detect(sentences) if chosen == AUTO_SCHEME else chosen, []
        if chosen != AUTO_SCHEME:
            check_prefixes(sentences, chosen, source)
        if scheme == ts.IOB1:
            notes.append(f"{source}: the tags are IOB1 (I- starts an entity); they were converted to IOB2.")
            return [" ".join(ts.to_iob2(s)) for s in sentences], notes
        bad = [i + 1 for i, s in enumerate(sentences) if ts.ill_formed(s, scheme)]
        if bad:
            notes.append(
                f"{source}: {len(bad)} sentence(s) have ill-formed {scheme} tags (an entity that does not "
                f"start or end right; sentences {listing(bad)}); strict scoring does not count those "
                "entities."
            )
        return names, notes

    def scheme(self, label_names: list[str]) -> str:
        """The scheme a run scores by: the one chosen (IOB1's tags were made IOB2 on reading),
        else the one its tag set shows."""
        chosen = self.settings.tag_scheme
        if chosen == AUTO_SCHEME:
            return ts.detect([label_names])
        return ts.IOB2 if chosen == ts.IOB1 else chosen

    def primary_of(self, label_names: list[str]) -> str:
        return "token_accuracy" if self.scheme(label_names) == ts.PLAIN else "entity_f1"

    def label_names(
        self, names: list[str], numeric: bool, rows: list[int], column: str, source: str, splitting: bool
    ) -> list[str]:
        tags = Counter(t for n in names for t in n.split(" "))
        if len(tags) < 2:
            raise DataError(
                f"{source}: column '{column}' has only one tag ({next(iter(tags))!r}); token classification "
                "needs at least 2 (e.g. O and B-PER). Check the tag column."
            )
        return sorted(tags, key=lambda t: (t != ts.OUTSIDE, ts.split_tag(t)[1], t))

    def unknown_labels(self, names: list[str], label_names: list[str]) -> list[str]:
        return sorted({t for n in names for t in n.split(" ")} - set(label_names))

    def eval_warnings(
        self, names: list[str], rows: list[int], label_names: list[str], column: str, source: str
    ) -> list[str]:
        unknown = self.unknown_labels(names, label_names)
        if unknown:
            raise DataError(
                f"{source}: tag(s) not in the training data: {listing(unknown)}; training tags: "
                f"{listing(label_names)}. Fix the tags or add training sentences with them."
            )
        return []

    def targets(self, names: list[str], label_names: list[str]) -> list[Any]:
        ids = {name: i for i, name in enumerate(label_names)}
        return [[ids[t] for t in n.split(" ")] for n in names]

    def strata(self, targets: list[Any]) -> list[int]:
        """The rarest tag of each sentence (kept on both sides of a split where it has 2 rows)."""
        rows = Counter(t for tags in targets for t in set(tags))
        return [min(set(tags), key=lambda t: (rows[t] < 2, rows[t], t)) if rows else 0 for tags in targets]

    def model_kwargs(self, label_names: list[str]) -> dict[str, Any]:
        return label_kwargs(label_names)

    def encode(
        self, tokenizer: Any, texts: list[str], pairs: list[str] | None, targets: list[Any], max_length: int
    ) -> list[dict[str, list[int]]]:
        enc = tokenizer(
            [t.split(" ") for t in texts], is_split_into_words=True, truncation=True, max_length=max_length
        )
        return [
            {k: enc[k][i] for k in enc} | {"labels": first_subword_labels(enc.word_ids(i), tags)}
            for i, tags in enumerate(targets)
        ]

    def blank_targets(self, texts: list[str]) -> list[Any]:
        return [[0] * len(t.split(" ")) for t in texts]

    row_keys = ("labels",)  # a tag per token, from ``encode``
    row_unit = "sentences"  # the unit an interval resamples: a sentence's words are not independent

    def check_texts(self, rows: list[str]) -> None:
        empty = next((i for i, row in enumerate(rows) if not row.strip()), None)
        if empty is not None:
            raise ConfigError(f"text {empty + 1} has no words to tag; type a sentence")

    def shown_items(self, items: list[dict[str, Any]], rows: list[str]) -> list[dict[str, Any]]:
        return [{**item, "words": row.split(" ")} for item, row in zip(items, rows, strict=True)]

    view_kind = "tags"
    per_output_key, per_output_in_summary = "per_entity", True  # per entity type (per tag, for POS)
    predicts = "a tag per word"

    def error_rows(
        self, frame: Any, wrong_only: bool, true_label: str | None, predicted_label: str | None, sort: str
    ) -> Any:
        """Sentences: those with an entity (word) error, the most errors first."""
        frame = frame[frame["errors"] > 0] if wrong_only else frame
        if sort != "row":
            frame = frame.sort_values("errors", ascending=sort == "confidence_asc", kind="stable")
        return frame

    def shown_row(self, record: dict[str, Any]) -> dict[str, Any]:
        """The gold and the predicted spans, side by side (stored as JSON in the frame)."""
        return {
            "true_entities": json.loads(record["true_entities"]),
            "predicted_entities": json.loads(record["predicted_entities"]),
            "plain": bool(record.get("plain")),
        }

    def collate(
        self, inputs: dict[str, torch.Tensor], rows: list[dict[str, Any]], targets: list[Any], left: bool
    ) -> dict[str, torch.Tensor]:
        """Each row's per-token labels padded like its ids, with the ignore index."""
        import torch

        labels = torch.full(inputs["input_ids"].shape, IGNORE, dtype=torch.long)
        for i, row in enumerate(rows):
            tags = torch.tensor(row["labels"], dtype=torch.long)
            start = labels.shape[1] - len(tags) if left else 0
            labels[i, start : start + len(tags)] = tags
        return {**inputs, "labels": labels}

    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.float().softmax(-1)

    def row_outputs(self, outputs: torch.Tensor, labels: torch.Tensor) -> list[np.ndarray]:
        keep = (labels != IGNORE).cpu()
        outputs = outputs[:, -labels.shape[1] :].cpu()  # a shallow prompt's virtual tokens come first
        return [outputs[i][keep[i]].numpy() for i in range(len(keep))]

    def stack(self, rows: list[np.ndarray], targets: list[Any]) -> np.ndarray:
        return pad_outputs(rows, targets)

    def truth(self, targets: list[Any]) -> np.ndarray:
        return pad_targets(targets)

    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        gold, predicted = word_tags(true, outputs, label_names)
        scheme = self.scheme(label_names)
        words = [(g, p) for gs, ps in zip(gold, predicted, strict=True) for g, p in zip(gs, ps, strict=True)]
        metrics: dict[str, Any] = {
            "entity_f1": None, "entity_precision": None, "entity_recall": None, "entity_macro_f1": None,
            "token_accuracy": float(np.mean([g == p for g, p in words])) if words else 0.0,
        }  # fmt: skip
        if scheme == ts.PLAIN:
            metrics["per_entity"] = per_tag(words, label_names)
        else:
            metrics |= ts.entity_report(gold, predicted, scheme)
        metrics["eval_loss"] = float(np.mean(self.row_losses(true, outputs))) + 0.0 if len(true) else 0.0
        metrics["score"] = metrics[self.primary_of(label_names)]
        return metrics

    def score(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None = None) -> float:
        """Without the tag names (a caller that only has ids) the scheme is unknown: word accuracy."""
        counts = SentenceCounts.of(
            *word_tags(true, outputs, label_names), self.scheme(label_names) if label_names else None
        )
        return float(counts_metric(counts.true, counts.predicted, -1))

    def row_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Each sentence's mean cross-entropy over its words."""
        mask = true != IGNORE
        picked = np.take_along_axis(np.nan_to_num(outputs), np.where(mask, true, 0)[..., None], -1)[..., 0]
        losses = -np.log(np.clip(picked, 1e-12, 1.0)) * mask
        return losses.sum(-1) / np.maximum(mask.sum(-1), 1)

    def search_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Cross-entropy balanced over tags, split by sentence: each word weighs 1 / (tags x its
        tag's words), so the rows' mean is the mean over tags of each tag's mean loss.

        Plain cross-entropy is mostly "O": a short search then ranked first the rate that learned
        the prior fastest, and on WNUT-17 the bottleneck adapter's 3e-3 won it and its run never
        left all-"O" (F1 0; here 1e-3: 0.415). The cost, there: full fine-tuning took 3e-5 (0.366,
        against 0.416 at 1e-4 under plain cross-entropy). Weighing "O" against all other words
        half each did no better (full 3e-5; the adapter 3e-4: 0.325). bench/TOKENS.md."""
        mask = true != IGNORE
        picked = np.take_along_axis(np.nan_to_num(outputs), np.where(mask, true, 0)[..., None], -1)[..., 0]
        losses = -np.log(np.clip(picked, 1e-12, 1.0)) * mask
        tags, counts = np.unique(true[mask], return_counts=True)
        per_word = np.zeros(int(tags.max()) + 1 if len(tags) else 1)
        per_word[tags] = 1.0 / (len(tags) * counts)
        return (losses * per_word[np.where(mask, true, 0)] * mask).sum(-1) * len(true)

    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        counts = Counter(t for tags in train for t in tags)
        outside = label_names.index(ts.OUTSIDE) if ts.OUTSIDE in label_names else None
        tag = outside if outside is not None else counts.most_common(1)[0][0]
        true = self.truth(evaluation)
        outputs = np.where((true != IGNORE)[..., None], np.eye(len(label_names))[tag], np.nan)
        metrics = self.metrics(true, outputs, label_names)
        kept = ("score", "token_accuracy", "entity_f1")
        return {"tag": label_names[tag], **{k: metrics[k] for k in kept}}

    def baseline_text(self, baseline: dict[str, Any]) -> str:
        return f"the baseline ({baseline['score']:.3f} by tagging every word '{baseline['tag']}')"

    def predictions(self, outputs: np.ndarray, label_names: list[str]) -> list[Any]:
        return [" ".join(tags) for tags in predicted_tags(outputs, label_names)]

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        import torch.nn.functional as F

        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=IGNORE)

    def prediction_columns(self, outputs: np.ndarray, label_names: list[str]) -> dict[str, list[Any]]:
        tags = predicted_tags(outputs, label_names)
        return {
            "predicted_tags": [" ".join(t) for t in tags],
            "entities": [json.dumps(found) for found in spans(tags, label_names)],
        }

    def prediction_items(self, outputs: np.ndarray, label_names: list[str]) -> list[dict[str, Any]]:
        """Each text's tags and entities (word offsets), and a line that says them."""
        tags = predicted_tags(outputs, label_names)
        plain = self.scheme(label_names) == ts.PLAIN
        items = []
        for row_tags, entities, probs in zip(tags, spans(tags, label_names), outputs, strict=True):
            named = ", ".join(f"{e['type']} (words {e['start'] + 1}-{e['end']})" for e in entities)
            items.append({
                "label": " ".join(row_tags) if plain else named or "no entities",
                "probability": None, "score": None, "tags": row_tags, "entities": entities, "plain": plain,
                "confidence": [round(float(c), 4) for c in np.max(probs[: len(row_tags)], -1)],
            })  # fmt: skip
        return items

    def frame_columns(
        self, targets: list[Any], outputs: np.ndarray, label_names: list[str]
    ) -> dict[str, Any]:
        """Each sentence's gold and predicted tags, whether all are right, its ``errors``
        (entities missed or wrong; words, for part of speech: error analysis's order), both
        sides' entities (JSON) and ``plain`` (tags without entities: drawn under each word)."""
        gold, predicted = word_tags(self.truth(targets), outputs, label_names)
        return sentence_frame(gold, predicted, self.scheme(label_names))

    def target_names(self, targets: list[Any], label_names: list[str]) -> list[str]:
        return [" ".join(label_names[t] for t in tags) for tags in targets]

    def intervals(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        gold, predicted = word_tags(true, outputs, label_names)
        counts = SentenceCounts.of(gold, predicted, self.scheme(label_names))
        return {"score": self.score(true, outputs, label_names), "score_ci": list(ratio_interval(counts))}

    def scoring(self, runs: list[tuple[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray], Any, str]:
        """Sentences as units: each run's per-sentence counts (entities right, predicted, gold;
        or words right of all), paired sentence by sentence."""
        gold = [str(t).split(" ") for t in runs[0][1]["true"]]
        scheme = ts.detect(gold)
        by_run = {
            name: SentenceCounts.of(gold, [str(t).split(" ") for t in f["predicted"]], scheme)
            for name, f in runs
        }
        true = next(iter(by_run.values())).true
        metric = "token_accuracy" if scheme == ts.PLAIN else "entity_f1"
        return true, {name: c.predicted for name, c in by_run.items()}, counts_metric, metric

    def distribution(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Words per tag, the most frequent first."""
        return dict(Counter(t for n in names for t in n.split(" ")).most_common())

    def label_chart(self, names: list[str], numeric: bool) -> dict[str, Any]:
        """Entities per type, the most frequent first, with "O"'s share of the words in the title
        (a bar of "O" words dwarfs every entity bar); plain tags (part of speech): words per tag."""
        tags = [n.split(" ") for n in names]
        scheme = ts.detect(tags)
        if scheme == ts.PLAIN:
            return chart("Words per tag", "tag", "words", self.distribution(names, numeric))
        found = ts.entities([ts.to_iob2(t) if scheme == ts.IOB1 else t for t in tags], scheme)
        per_type = Counter(kind for spans in found for kind, _, _ in spans)
        words = sum(len(t) for t in tags)
        outside = sum(t == ts.OUTSIDE for row in tags for t in row)
        share = f"O: {outside / max(words, 1):.1%} of {words:,} words"
        return chart(f"Entities per type ({share})", "entity type", "entities", dict(per_type.most_common()))

    def preview(self, texts: list[str], names: list[str]) -> list[dict[str, Any]] | None:
        tags = [n.split(" ") for n in names]
        scheme = ts.detect(tags)
        found = ts.entities([ts.to_iob2(t) if scheme == ts.IOB1 else t for t in tags], scheme)
        return [
            {"words": text.split(" "), "tags": row, "plain": scheme == ts.PLAIN,
             "entities": entity_dicts(f)}
            for text, row, f in zip(texts, tags, found, strict=True)
        ]  # fmt: skip

    def describe_labels(self, names: list[str], numeric: bool) -> str:
        tags = {t for n in names for t in n.split(" ")}
        scheme = ts.detect([n.split(" ") for n in names])
        kinds = sorted({ts.split_tag(t)[1] for t in tags if t != ts.OUTSIDE})
        what = f"{len(kinds)} entity types" if scheme != ts.PLAIN else "no entities (scored per word)"
        return f"a tag per word ({scheme}): {len(tags)} tags, {what}"

    def card_predict(self, library: str, prompts_in_input: bool) -> str:
        """The tags per sub-word, then (where transformers' pipeline can run the model: not a
        probe's function, not with virtual tokens in the input) the pipeline's entities."""
        if library == "own" or prompts_in_input:
            return self.card_output
        return self.card_output + (
            "from transformers import pipeline\n"
            'tagger = pipeline("token-classification", model=model, tokenizer=tok,\n'
            '                  aggregation_strategy="simple")\n'
            'print(tagger("an example text"))\n'
        )

    def card_outputs(self, label_names: list[str]) -> str:
        return f"Tags per word: {', '.join(label_names)}."

    def epoch_text(self, metrics: dict[str, Any]) -> str:
        shown = " ".join(
            f"{k.replace('_', '-')} {metrics[k]:.4f}" for k in self.headline if metrics.get(k) is not None
        )
        return f"{shown} eval loss {metrics['eval_loss']:.4f}"


def check_prefixes(sentences: list[list[str]], scheme: str, source: str) -> None:
    """A DataError when the tags use a prefix the chosen scheme does not have (E-/S- under IOB,
    or no prefix at all under an entity scheme); plain takes any tags."""
    iob = {"", "B", "I"}
    allowed = {ts.IOB2: iob, ts.IOB1: iob, ts.IOBES: iob | {"E", "S"}}.get(scheme)
    if allowed is None:
        return
    prefixes = {ts.split_tag(t)[0] for s in sentences for t in s}
    if not prefixes - {""}:
        raise DataError(
            f"{source}: no tag has a B-/I- prefix, so the tags mark no entities under {scheme}; choose "
            "the tag scheme 'plain' (scored per word) or 'auto'."
        )
    extra = sorted(prefixes - allowed)
    if extra:
        found = next(t for s in sentences for t in s if ts.split_tag(t)[0] in extra)
        raise DataError(
            f"{source}: the tag {found!r} has a prefix ({', '.join(p + '-' for p in extra)}) that {scheme} "
            f"does not use; choose the tag scheme {ts.IOBES if set(extra) <= {'E', 'S'} else 'plain'} or "
            "'auto'."
        )


def _listed(value: object, source: str, row: int, column: str, what: str) -> list[str]:
    items = as_list(value)
    if items is None:
        shown = str(value)[:40]
        raise DataError(
            f"{source}: row {row}: column '{column}' holds {type(value).__name__} {shown!r} where a list of "
            f"{what} is expected (token data has a list of words and a list of tags per row)."
        )
    return [label_text(x) if not isinstance(x, str) else x.strip() for x in items]
