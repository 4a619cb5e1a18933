"""Multi-label classification: zero or more labels per text or text pair (topics, emotions, tags).

Data: a list per row (JSON, Parquet), names joined by ``;``, ``|`` or ``,`` (detected, or the
``label_separator`` setting), or one 0/1 column per label (``label_columns``, or detected when
every other column holds text). The head is one sigmoid per label
(``problem_type="multi_label_classification"``: transformers trains it with binary
cross-entropy). A label is chosen when its probability reaches the threshold; "auto" picks the
threshold with the best micro-F1 on held-out training rows after training (0.5 until then: the
epochs are compared at 0.5). Metrics by scikit-learn: micro-F1 (primary), macro-F1, samples-F1,
subset accuracy, Hamming loss and per-label precision/recall/F1. Baseline: the training data's
most frequent label set, predicted for every row. Intervals and Compare's paired test resample
rows through per-row counts (micro-F1 is a ratio of sums: ``token_scores.counts_metric``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.catalogue import label_kwargs
from backend.cells import INT_RE, as_list, listing, looks_numeric
from backend.errors import ConfigError, DataError
from backend.knobs import knob
from backend.tasks import label_sets as ls
from backend.tasks.base import LABEL, TEXT, TEXT_PAIR, Cells, Role, Task, chart
from backend.tasks.token_scores import BASE, counts_metric

if TYPE_CHECKING:
    import torch

AUTO = "auto"
FIXED = 0.5  # the threshold before "auto" has chosen one (each epoch's evaluation)
GRID = np.round(np.arange(0.05, 0.951, 0.05), 2)  # the thresholds "auto" tries
HOLDOUT_SHARE, HOLDOUT_MIN, HOLDOUT_MAX = 10, 20, 500  # rows "auto" holds out: a tenth, within these


@dataclass(frozen=True)
class LabelSetSettings:
    threshold: str = knob(
        AUTO,
        "Threshold",
        "A label is chosen when its probability is at least this (a number between 0 and 1). auto: the "
        "threshold with the best micro-F1 on a tenth of the training rows, held out and never trained on.",
    )
    label_separator: str = knob(
        AUTO,
        "Label separator",
        "What joins a row's label names in one column. auto: detected from the file (a JSON or Parquet "
        "list needs none).",
        choices=(AUTO, ";", "|", ","),
        choice_labels=("auto (detected)", "; (semicolon)", "| (bar)", ", (comma)"),
    )
    label_columns: str = knob(
        "",
        "Label columns",
        "One 0/1 column per label, named with commas (joy,anger,fear). Empty: detected when every column "
        "but the text holds only 0 and 1.",
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "threshold", _threshold_text(self.threshold))
        object.__setattr__(self, "label_columns", str(self.label_columns or "").strip())


def _threshold_text(value: Any) -> str:
    """The threshold as stored: "auto" or its number (a ConfigError otherwise)."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not 0 < number < 1:
        raise ConfigError(f"Threshold must be 'auto' or a number between 0 and 1 (exclusive), not {value!r}")
    return f"{number:g}"


class MultiLabel(Task):
    key = "multi-label"
    label = "Multi-label classification"
    description = "Zero or more labels per text or text pair (topics, emotions, tags)."
    primary_metric = "micro_f1"
    headline = ("micro_f1", "macro_f1", "samples_f1", "subset_accuracy", "hamming_loss", "threshold")
    baseline_label = "always the most frequent label set"
    peft_task_type = "SEQ_CLS"
    settings_cls = LabelSetSettings
    settings = LabelSetSettings()
    view_kind = "labels"
    per_output_key, per_output_in_summary = "per_label", True
    predicts = "a set of labels per text"
    cells = "a set of labels per text"
    card_output = ""  # ``card_predict``: sigmoid, then the run's threshold
    roles = (
        TEXT,
        TEXT_PAIR,
        Role(LABEL.key, LABEL.slot, "Labels column",
             "Column holding each row's labels: a list, or names joined by ; | or , (multi-label).",
             ("labels", *LABEL.names)),
    )  # fmt: skip

    @property
    def cut(self) -> float:
        """The threshold a prediction uses now: the chosen or given one, else 0.5."""
        return FIXED if self.settings.threshold == AUTO else float(self.settings.threshold)

    # ---- reading files -------------------------------------------------------------------------
    def frame(self, df: Any, source: str) -> Any:
        """One 0/1 column per label made one column of label sets: the columns named by
        ``label_columns``, or, by default, detected when there are two or more, no column is named
        like a label column and every other column holds text."""
        named = [c.strip() for c in self.settings.label_columns.split(",") if c.strip()]
        if named:
            return ls.assemble(df, list(dict.fromkeys(named)), source)
        binary = ls.binary_columns(df)
        others = [str(c) for c in df.columns if str(c) not in binary]
        names = {n.lower() for r in self.roles if r.slot == "label" for n in r.names}
        if len(binary) < 2 or not others or any(c.lower() in names for c in others):
            return df
        if not all(_texts(df[c].tolist()) for c in others):
            return df  # numbers or lists beside them (an id, a year): not texts and label columns
        return ls.assemble(df, binary, source)

    def holds(self, text_cells: list[Any], label_cells: list[Any]) -> bool:
        """Texts (not lists of words) with label sets: a list in some label cell, a separator set,
        or one detected."""
        if any(as_list(v) is not None for v in text_cells):
            return False
        if any(as_list(v) is not None for v in label_cells) or self.settings.label_separator != AUTO:
            return True
        return ls.detect_separator(label_cells) is not None

    def reads(self, text_cells: list[Any], label_cells: list[Any]) -> bool:
        """Named for a run, any texts: a cell without a separator is a set of one label."""
        return not any(as_list(v) is not None for v in text_cells)

    def separator(self, cells: list[Any]) -> str | None:
        chosen = self.settings.label_separator
        return chosen if chosen != AUTO else ls.detect_separator(cells)

    def read_cells(self, cells: Cells) -> tuple[list[str], list[str] | None, list[str], bool]:
        """Each row's label set (``label_sets.as_cell``) and whether every name is a whole number."""
        sep = self.separator(cells.labels)
        sets = [
            ls.read_set(cell, sep, f"{cells.source}: row {row}, column '{cells.label_column}'")
            for row, cell in zip(cells.rows, cells.labels, strict=True)
        ]
        numeric = all(INT_RE.fullmatch(n) for names in sets for n in names)
        pairs = [str(v) for v in cells.pairs] if cells.pairs is not None else None
        return [str(v) for v in cells.texts], pairs, [ls.as_cell(s) for s in sets], numeric

    def fits(self, names: list[str], numeric: bool) -> bool:
        return True  # the registry offers it for label-set data only

    def _counts(self, names: list[str]) -> Counter[str]:
        return Counter(n for cell in names for n in ls.of_cell(cell))

    def label_names(
        self, names: list[str], numeric: bool, rows: list[int], column: str, source: str, splitting: bool
    ) -> list[str]:
        counts = self._counts(names)
        if not counts:
            raise DataError(
                f"{source}: no row of column '{column}' has any label; multi-label classification learns "
                "from rows with labels. Check the label column (or the label columns)."
            )
        if len(counts) < 2:
            raise DataError(
                f"{source}: column '{column}' has only one label ({next(iter(counts))!r}); with one label "
                "choose the classification task (the label or not), or add rows with other labels."
            )
        return sorted(counts, key=int) if numeric else sorted(counts)

    def unknown_labels(self, names: list[str], label_names: list[str]) -> list[str]:
        return sorted(set(self._counts(names)) - set(label_names))

    def eval_warnings(
        self, names: list[str], rows: list[int], label_names: list[str], column: str, source: str
    ) -> list[str]:
        unknown = self.unknown_labels(names, label_names)
        if unknown:
            raise DataError(
                f"{source}: label(s) only in the evaluation file, never in the training data: "
                f"{listing(unknown)}; a run cannot learn them. Add training rows with them, or remove them."
            )
        unseen = sorted(set(label_names) - set(self._counts(names)))
        return [f"{source}: no evaluation row has the label(s) {listing(unseen)}."] if unseen else []

    def cell_counts(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Rows per label, the most frequent first."""
        return dict(self._counts(names).most_common())

    def distribution(self, names: list[str], numeric: bool) -> dict[str, int]:
        return self.cell_counts(names, numeric)

    def label_chart(self, names: list[str], numeric: bool) -> dict[str, Any]:
        sizes = [len(ls.of_cell(n)) for n in names]
        several = sum(s >= 2 for s in sizes) / max(len(sizes), 1)
        title = f"Rows per label ({several:.1%} of rows have two or more)"
        return chart(title, "label", "rows", self.distribution(names, numeric))

    def describe_labels(self, names: list[str], numeric: bool) -> str:
        sizes = [len(ls.of_cell(n)) for n in names]
        several = sum(s >= 2 for s in sizes) / max(len(sizes), 1)
        none = sum(s == 0 for s in sizes)
        return (
            f"a set of labels per row (multi-label): {len(self._counts(names))} labels, "
            f"{np.mean(sizes) if sizes else 0:.2f} per row, {several:.1%} of rows with two or more"
            + (f", {none} with none" if none else "")
        )

    # ---- training ------------------------------------------------------------------------------
    def targets(self, names: list[str], label_names: list[str]) -> list[Any]:
        ids = {name: i for i, name in enumerate(label_names)}
        out = []
        for cell in names:
            row = [0.0] * len(label_names)
            for name in ls.of_cell(cell):
                row[ids[name]] = 1.0
            out.append(row)
        return out

    def strata(self, targets: list[Any]) -> list[int]:
        """Each row's rarest label (one with 2 rows or more where it has one, so both sides of a
        split get it); rows without a label are a stratum of their own."""
        sets = [[i for i, v in enumerate(row) if v] for row in targets]
        rows = Counter(i for s in sets for i in s)
        none = len(targets[0]) if targets else 0
        return [min(s, key=lambda i: (rows[i] < 2, rows[i], i)) if s else none for s in sets]

    def model_kwargs(self, label_names: list[str]) -> dict[str, Any]:
        return {**label_kwargs(label_names), "problem_type": "multi_label_classification"}

    def start_head(self, head: torch.nn.Module, targets: list[Any]) -> None:
        """Each output's bias starts at its label's log-odds in the training rows: a sigmoid head
        at 0 says 0.5 for every label, and on rare labels (most of them) the first hundreds of
        steps only learn to say "no"."""
        import torch

        rate = np.clip(np.mean(np.asarray(targets, dtype=float), axis=0), 1e-3, 1 - 1e-3)
        last = [m for m in head.modules() if isinstance(m, torch.nn.Linear) and m.out_features == len(rate)]
        if last and last[-1].bias is not None:
            with torch.no_grad():
                last[-1].bias.copy_(torch.tensor(np.log(rate / (1 - rate)), dtype=last[-1].bias.dtype))

    def collate(
        self, inputs: dict[str, torch.Tensor], rows: list[dict[str, Any]], targets: list[Any], left: bool
    ) -> dict[str, torch.Tensor]:
        import torch

        return {**inputs, "labels": torch.tensor(targets, dtype=torch.float)}  # the head's BCE

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        import torch.nn.functional as F

        return F.binary_cross_entropy_with_logits(logits.float(), targets.float())

    def blank_targets(self, texts: list[str]) -> list[Any]:
        return [[0.0] for _ in texts]

    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        return logits.float().sigmoid()

    # ---- the threshold -------------------------------------------------------------------------
    def holdout_rows(self, train_rows: int) -> int:
        """A tenth of the training rows (20 to 500) when the threshold is "auto"; none otherwise."""
        if self.settings.threshold != AUTO:
            return 0
        return min(HOLDOUT_MAX, max(train_rows // HOLDOUT_SHARE, min(HOLDOUT_MIN, train_rows // 4)))

    def choose_settings(self, true: np.ndarray, outputs: Any, label_names: list[str]) -> MultiLabel:
        """The threshold of ``GRID`` with the best micro-F1 on the held-out rows (of equals, the
        nearest 0.5)."""
        if self.settings.threshold != AUTO or not len(true):
            return self
        scores = [(_micro_f1(true, np.asarray(outputs) >= t), -abs(t - FIXED), t) for t in GRID]
        best = max(scores)[2]
        return self.configured({**self.settings_dict(), "threshold": f"{best:g}"})

    def chosen(self, outputs: np.ndarray) -> np.ndarray:
        return np.asarray(outputs, dtype=float) >= self.cut

    # ---- scores --------------------------------------------------------------------------------
    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        from sklearn.metrics import (
            accuracy_score,
            f1_score,
            hamming_loss,
            precision_recall_fscore_support,
        )

        true, predicted = np.asarray(true, dtype=int), self.chosen(outputs).astype(int)
        ids = list(range(len(label_names)))
        p, r, f, s = precision_recall_fscore_support(true, predicted, labels=ids, zero_division=0)
        per_label = {
            name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
            for i, name in enumerate(label_names)
        }
        metrics: dict[str, Any] = {
            "micro_f1": float(f1_score(true, predicted, average="micro", zero_division=0)),
            "macro_f1": float(f1_score(true, predicted, labels=ids, average="macro", zero_division=0)),
            # a row with no gold and no predicted label scores 1 (both empty: right), as it should
            "samples_f1": float(f1_score(true, predicted, average="samples", zero_division=1)),
            "subset_accuracy": float(accuracy_score(true, predicted)),
            "hamming_loss": float(hamming_loss(true, predicted)),
            "threshold": self.cut,
            "per_label": per_label,
            "eval_loss": float(self.row_losses(true, outputs).mean()) + 0.0 if len(true) else 0.0,
        }
        metrics["score"] = metrics["micro_f1"]
        return metrics

    def score(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None = None) -> float:
        return _micro_f1(true, self.chosen(outputs))

    def row_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Each row's binary cross-entropy, the mean over its labels."""
        p = np.clip(np.asarray(outputs, dtype=float), 1e-12, 1 - 1e-12)
        y = np.asarray(true, dtype=float)
        return -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(-1)

    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        """The most frequent label set of the training rows, predicted for every row."""
        common = Counter(tuple(row) for row in train).most_common(1)[0][0]
        outputs = np.tile(np.asarray(common, dtype=float), (len(evaluation), 1))
        metrics = self.configured({"threshold": FIXED}).metrics(np.asarray(evaluation), outputs, label_names)
        kept = ("micro_f1", "macro_f1", "samples_f1", "subset_accuracy", "hamming_loss", "score")
        names = [label_names[i] for i, v in enumerate(common) if v]
        return {"label_set": names, **{k: metrics[k] for k in kept}}

    def baseline_text(self, baseline: dict[str, Any]) -> str:
        shown = ", ".join(baseline["label_set"]) or "no label"
        score = baseline["score"]
        return f"the baseline (micro-F1 {score:.3f} by always answering the most frequent label set: {shown})"

    def epoch_text(self, metrics: dict[str, Any]) -> str:
        return (
            f"micro-F1 {metrics['micro_f1']:.4f} macro-F1 {metrics['macro_f1']:.4f} subset accuracy "
            f"{metrics['subset_accuracy']:.4f} (threshold {metrics['threshold']:g}) eval loss "
            f"{metrics['eval_loss']:.4f}"
        )

    def intervals(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        from backend.significance import score_interval

        gold, packed = _row_counts(np.asarray(true, dtype=bool), self.chosen(outputs))
        return {
            "score": self.score(true, outputs),
            "score_ci": list(score_interval(gold, packed, counts_metric)),
        }

    def scoring(self, runs: list[tuple[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray], Any, str]:
        """Rows as units: each run's per-row counts (labels right, predicted, gold), paired row by row."""
        gold_sets = [set(ls.of_cell(c)) for c in runs[0][1]["true"]]
        names = sorted(
            {n for s in gold_sets for n in s}
            | {n for _, f in runs for c in f["predicted"] for n in ls.of_cell(c)}
        )
        gold = _multi_hot(gold_sets, names)
        by_run = {
            name: _row_counts(gold, _multi_hot([set(ls.of_cell(c)) for c in f["predicted"]], names))[1]
            for name, f in runs
        }
        return gold.sum(-1).astype(np.int64), by_run, counts_metric, "micro_f1"

    def same_outputs(self, got: np.ndarray, want: np.ndarray, tolerance: float) -> dict[str, Any]:
        """The same probabilities, and the same label sets at the run's threshold."""
        shaped = got.shape == want.shape
        diff = float(np.max(np.abs(got - want), initial=0.0)) if shaped else float("inf")
        same = shaped and bool((self.chosen(got) == self.chosen(want)).all())
        return {"labels_identical": same, "max_abs_diff": diff, "ok": same and diff <= tolerance}

    # ---- what people read ----------------------------------------------------------------------
    def predictions(self, outputs: np.ndarray, label_names: list[str]) -> list[Any]:
        return [ls.as_cell([label_names[i] for i in np.flatnonzero(row)]) for row in self.chosen(outputs)]

    def prediction_columns(self, outputs: np.ndarray, label_names: list[str]) -> dict[str, list[Any]]:
        probs = np.asarray(outputs, dtype=float)
        return {
            "predicted_labels": self.predictions(probs, label_names),
            "probabilities": [
                json.dumps({n: round(float(p), 6) for n, p in zip(label_names, row, strict=True)})
                for row in probs
            ],
        }

    def prediction_items(self, outputs: np.ndarray, label_names: list[str]) -> list[dict[str, Any]]:
        """Every label with its probability, the most probable first, the chosen marked."""
        items = []
        for row, chosen in zip(np.asarray(outputs, dtype=float), self.chosen(outputs), strict=True):
            order = np.argsort(-row, kind="stable")
            labels = [
                {"name": label_names[i], "probability": round(float(row[i]), 6), "chosen": bool(chosen[i])}
                for i in order
            ]
            picked = [e["name"] for e in labels if e["chosen"]]
            items.append({"label": ", ".join(picked), "probability": None, "score": None, "labels": labels})
        return items

    def frame_columns(
        self, targets: list[Any], outputs: np.ndarray, label_names: list[str]
    ) -> dict[str, Any]:
        """Each row's gold and predicted sets, whether they are equal, its ``missed`` and ``extra``
        labels, their count (``errors``: error analysis's order) and the probabilities."""
        gold = np.asarray(targets, dtype=bool).reshape(len(targets), len(label_names))
        predicted = self.chosen(outputs).reshape(len(targets), len(label_names))

        def cells(rows: np.ndarray) -> list[str]:
            return [ls.as_cell([label_names[i] for i in np.flatnonzero(row)]) for row in rows]

        return {
            "true": cells(gold),
            "predicted": cells(predicted),
            "correct": (gold == predicted).all(-1),
            "missed": cells(gold & ~predicted),
            "extra": cells(~gold & predicted),
            "errors": (gold != predicted).sum(-1),
            "probs": list(np.asarray(outputs, dtype=np.float64)),
        }

    def target_names(self, targets: list[Any], label_names: list[str]) -> list[str]:
        return [ls.as_cell([label_names[i] for i, v in enumerate(row) if v]) for row in targets]

    sorts = ("confidence_desc", "confidence_asc", "row")  # the most errors first, the fewest, row order

    def error_rows(
        self, frame: Any, wrong_only: bool, true_label: str | None, predicted_label: str | None, sort: str
    ) -> Any:
        """Rows whose set is wrong (a label missed or extra), with a label among the gold or the
        predicted ones, the most errors first (``confidence_asc``: the fewest)."""
        if wrong_only:
            frame = frame[~frame["correct"]]
        for column, label in (("true", true_label), ("predicted", predicted_label)):
            if label:
                frame = frame[frame[column].map(lambda cell, label=label: label in ls.of_cell(cell))]
        if sort != "row":
            frame = frame.sort_values("errors", ascending=sort == "confidence_asc", kind="stable")
        return frame

    def shown_row(self, record: dict[str, Any]) -> dict[str, Any]:
        """The gold, predicted, missed and extra labels as lists."""
        return {k: ls.of_cell(record[k]) for k in ("true", "predicted", "missed", "extra") if k in record}

    def card_outputs(self, label_names: list[str]) -> str:
        return (
            f"Labels (any number per text): {', '.join(label_names)}. One sigmoid per label "
            '(`problem_type="multi_label_classification"`); a label is chosen when its probability reaches '
            "the threshold in `labels.json`."
        )

    def card_predict(self, library: str, prompts_in_input: bool) -> str:
        return (
            "import json\n"
            "meta = json.load(open('labels.json'))  # id2label and the run's threshold\n"
            "probs = torch.sigmoid(getattr(out, 'logits', out).float())[0]  # one probability per label\n"
            "chosen = [i for i, p in enumerate(probs.tolist()) if p >= meta['threshold']]\n"
            "print([meta['id2label'][str(i)] for i in chosen])\n"
        )

    def label_file(self) -> dict[str, Any]:
        """What ``labels.json`` holds beside the names: the head's problem type and the threshold."""
        return {"problem_type": "multi_label_classification", "threshold": self.cut}


def _texts(cells: list[Any]) -> bool:
    """A column of texts: strings (or blanks), not all of them numbers."""
    strings = [c for c in cells if isinstance(c, str) and c.strip()]
    return len(strings) == sum(c is not None and c == c for c in cells) and not all(
        map(looks_numeric, strings)
    )


def _micro_f1(true: np.ndarray, chosen: np.ndarray) -> float:
    gold, packed = _row_counts(np.asarray(true, dtype=bool), np.asarray(chosen, dtype=bool))
    return float(counts_metric(gold, packed))


def _row_counts(gold: np.ndarray, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: gold labels, and right · BASE + predicted (``token_scores``' packing)."""
    right = (gold & chosen).sum(-1).astype(np.int64)
    return gold.sum(-1).astype(np.int64), right * BASE + chosen.sum(-1).astype(np.int64)


def _multi_hot(sets: list[set[str]], names: list[str]) -> np.ndarray:
    index = {n: i for i, n in enumerate(names)}
    out = np.zeros((len(sets), len(names)), dtype=bool)
    for row, found in enumerate(sets):
        out[row, [index[n] for n in found]] = True
    return out
