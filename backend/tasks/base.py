"""The contract every task meets (:class:`Task`) and the few helpers tasks share."""

from __future__ import annotations

import copy
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from backend.cells import as_list, normalize_labels, sorted_label_names
from backend.errors import ConfigError
from backend.knobs import check_range, fields_info, unknown_settings

if TYPE_CHECKING:  # torch, sklearn and scipy load inside the methods: the web app starts without them
    import numpy as np
    import torch


@dataclass(frozen=True)
class Inference:
    """Where and how a task runs a model over encoded rows (``Task.predict``, ``evaluate``,
    ``search_score``). ``precision`` opens the run's autocast (training's: the tasks sit below
    it); ``forward`` (rows -> the model's output) replaces the model's own, e.g. over cached
    lower layers. Length-sorted batches pad least; outputs come back in the rows' order."""

    device: torch.device
    precision: Callable[[], AbstractContextManager[Any]] = nullcontext
    batch_size: int = 64
    group_by_length: bool = True
    forward: Callable[[list[int]], Any] | None = None


@dataclass(frozen=True)
class Cells:
    """The usable rows' cells of one file, as ``Task.read_cells`` reads them: the text, second
    text and label columns' cells, the rows' 1-based numbers and the names messages use."""

    texts: list[Any]
    pairs: list[Any] | None
    labels: list[Any]
    rows: list[int]
    source: str  # the file's name
    text_column: str
    label_column: str


@dataclass(frozen=True)
class Role:
    """A column a task's files have: the cell of a row it fills, how it is found, how it is
    chosen. Its setting and flag are ``<key>_column`` (``--score-column``); the Data tab's
    picker shows ``label`` and ``help``."""

    key: str  # "text", "text_pair", "label", "score", "tokens", "tags"
    slot: str  # the row's cell it fills: "text", "text_pair" or "label"
    label: str
    help: str
    names: tuple[str, ...] = ()  # column names that find it (any case), in order of preference
    required: bool = True

    @property
    def option(self) -> str:
        return f"{self.key}_column"


# The roles of a text (or two) with one label: what most tasks read.
TEXT = Role(
    "text", "text", "Text column", "Column holding the text (default: found by name).",
    ("text", "sentence", "review", "content", "sms", "message", "tweet", "document", "question",
     "text_a", "sentence1", "premise"),
)  # fmt: skip
TEXT_PAIR = Role(
    "text_pair", "text_pair", "Second text column", "Second text column, for sentence pairs.",
    ("text_b", "sentence2", "hypothesis"), required=False,
)  # fmt: skip
LABEL = Role(
    "label", "label", "Label column", "Column holding the label (default: found by name).",
    ("label", "labels", "class", "category", "target", "sentiment", "y"),
)  # fmt: skip


@dataclass(frozen=True)
class NoSettings:
    """The settings of a task that has none of its own."""


class Task(ABC):
    """One kind of output. Subclasses set the class attributes and implement the methods.

    ``primary_metric`` is the score that picks the best epoch, stops early, ranks the
    learning-rate search's runs, sweeps and Pareto, and decides "did not learn"; it is higher
    for better. Every metrics dict a task returns holds it also as ``score``, plus
    ``eval_loss`` (the training loss on the evaluation rows).
    """

    key: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str]
    primary_metric: ClassVar[str]
    headline: ClassVar[tuple[str, ...]]  # the summary keys a run reports (the last JSON line)
    baseline_label: ClassVar[str]  # what the trivial baseline does, e.g. "always the majority class"
    peft_task_type: ClassVar[str]  # peft.TaskType's name for this head
    baseline_key: ClassVar[str] = "baseline"  # where a run's summary keeps the baseline's scores
    # a target (and an output) per word of a text rather than per text: a probe pools each word's
    # first sub-word and trains its head on words (``backend.probing``)
    per_word: ClassVar[bool] = False
    auto_class: ClassVar[str] = "AutoModelForSequenceClassification"  # the head's transformers class
    # its outputs come from a head over the encoder's features (pooled, or per word), which a
    # probe can train on frozen, cached features; a task scored on the language model's own head
    # (generation) has none, and the probe refuses it
    feature_head: ClassVar[bool] = True
    # the model card's last lines after ``out = model(**enc)``: what the output means
    card_output: ClassVar[str]

    # A task's own settings (a dataclass of ``knob`` fields, as a method's Config): the UI's
    # controls, the CLI's flags and validation are made from them. ``settings`` holds a run's
    # values on the copy ``configured`` makes; the registry's instance has the defaults.
    settings_cls: ClassVar[type] = NoSettings
    settings: Any = NoSettings()

    def configured(self, values: Mapping[str, Any] | None) -> Self:
        """This task with a run's settings (``task_config``), checked: a setting the task does not
        have, or a value out of its range, is a ConfigError that names it."""
        values = dict(values or {})
        unknown = unknown_settings(self.settings_cls, values)
        if unknown:
            own = ", ".join(f["name"] for f in fields_info(self.settings_cls)) or "none"
            raise ConfigError(
                f"the task '{self.key}' has no setting {', '.join(repr(u) for u in unknown)} "
                f"(its settings: {own})"
            )
        try:
            settings = self.settings_cls(**values)
        except TypeError as exc:  # a value of the wrong kind for the dataclass
            raise ConfigError(f"the task '{self.key}': {exc}") from None
        check_range(settings)
        if settings == self.settings:
            return self  # the registry's instance stays the task of a run at its defaults
        task = copy.copy(self)
        task.settings = settings
        return task

    def holdout_rows(self, train_rows: int) -> int:
        """Training rows a run holds out, never trained on, to choose its "auto" settings on
        (``choose_settings``; a threshold): none by default."""
        return 0

    def choose_settings(self, true: np.ndarray, outputs: Any, label_names: list[str]) -> Self:
        """This task with its "auto" settings chosen on the held-out training rows' outputs (the
        run's final predictions, metrics and export use it); itself by default."""
        return self

    def settings_dict(self) -> dict[str, Any]:
        """The run's task settings as stored with it (``task_config``), after any "auto" choice."""
        return dataclasses.asdict(self.settings)

    # The columns its files have (``Role``): ``backend.data.mapping`` finds them by these names,
    # the settings and flags that choose them are ``<key>_column``, the Data tab labels its pickers
    # with them. A text, an optional second text and a label by default.
    roles: ClassVar[tuple[Role, ...]] = (TEXT, TEXT_PAIR, LABEL)

    # The cells a row of this task's files holds, in words for messages. A file goes to the first
    # task (in the registry's order) whose ``holds`` says the cells are its kind, which reads them
    # (``read_cells``); tasks that read the same kind of cells may then train on the file.
    cells: ClassVar[str] = "one label per text"

    def frame(self, df: Any, source: str) -> Any:
        """A table (a DataFrame) as this task reads it: columns it assembles from others (one
        0/1 column per label made one column of label sets), at its settings; every task's runs
        at its defaults on every table read, before its columns are mapped. The table as it is
        by default."""
        return df

    def holds(self, text_cells: list[Any], label_cells: list[Any]) -> bool:
        """Whether a sample of a file's text and label cells is this task's kind: no list."""
        return not any(as_list(v) is not None for v in (*text_cells, *label_cells))

    def reads(self, text_cells: list[Any], label_cells: list[Any]) -> bool:
        """Whether this task, named for a run, reads a file of these cells, where "auto" would
        need ``holds`` to say the file is its kind (a label-set task reads single labels as sets
        of one): ``holds`` by default."""
        return self.holds(text_cells, label_cells)

    def read_cells(self, cells: Cells) -> tuple[list[str], list[str] | None, list[str], bool]:
        """Each usable row's text, second text and label name as this task's rows hold them, and
        whether every label is a whole number. 1, "1" and 1.0 are one label."""
        names, numeric = normalize_labels(cells.labels, cells.rows, cells.source, cells.label_column)
        pairs = [str(v) for v in cells.pairs] if cells.pairs is not None else None
        return [str(v) for v in cells.texts], pairs, names, numeric

    def cell_counts(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Usable rows per label name as a dataset's row stores them, in label-id order."""
        from collections import Counter

        counts = Counter(names)
        return {name: counts[name] for name in sorted_label_names(names, numeric)}

    def normalise(self, names: list[str], source: str) -> tuple[list[str], list[str]]:
        """The label cells as the task reads them (IOB1 tags made IOB2), with what to say about
        them (a scheme repaired, ill-formed sequences counted). Unchanged for most tasks."""
        return names, []

    def primary_of(self, label_names: list[str]) -> str:
        """The primary metric of a run with these outputs (a tag set without entities is
        scored by word accuracy, not entity F1)."""
        return self.primary_metric

    def words(self, text: str) -> str:
        """A typed text as the rows of this task hold it (token data: its words, one space
        apart). Unchanged for a task that reads whole texts."""
        return text

    def text_of(self, cell: Any) -> str:
        """A cell of a file to predict on, as this task's rows hold a text."""
        return str(cell)

    def encode(
        self, tokenizer: Any, texts: list[str], pairs: list[str] | None, targets: list[Any], max_length: int
    ) -> list[dict[str, list[int]]]:
        """Each row's token ids (unpadded), as the model reads them; a ``labels`` list per row
        where a target is per token (a tag on each word's first sub-word, -100 elsewhere)."""
        args = (texts, pairs) if pairs is not None else (texts,)
        enc = tokenizer(*args, truncation=True, max_length=max_length)
        return [{k: enc[k][i] for k in enc} for i in range(len(texts))]

    # keys ``encode`` adds to a row beside the model's inputs (a per-token task's "labels"):
    # the batch pads the inputs without them and hands them to ``collate``
    row_keys: ClassVar[tuple[str, ...]] = ()

    def collate(
        self, inputs: dict[str, torch.Tensor], rows: list[dict[str, Any]], targets: list[Any], left: bool
    ) -> dict[str, torch.Tensor]:
        """A batch as the model trains on it: the padded ``inputs`` and this task's ``labels``,
        typed and padded by the task (``rows``: as ``encode`` made them; ``left``: the tokenizer
        pads on the left). Class ids, as cross-entropy takes them, by default."""
        import torch

        return {**inputs, "labels": torch.tensor(targets, dtype=torch.long)}

    def train_loss(self, model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """A training batch's loss as the run and the learning-rate search backpropagate it (the
        batch is ``collate``'s, on the model's device): the head's own loss on ``labels`` by
        default. Generation masks the prompt; embeddings train with a contrastive loss."""
        return model(**batch).loss

    def predict(self, model: Any, enc: Any, run: Inference) -> Any:
        """The outputs of every row of ``enc`` (``backend.data.batching.Encoded``), in its order
        and in eval mode: one forward pass per batch, ``outputs`` of the logits split per row and
        ``stack``ed, by default (class probabilities, scores, per-word outputs). A task whose
        outputs need more than one pass (``generate()``'s strings) runs its own."""
        import torch

        was_training = model.training
        model.eval()
        rows_out: list[Any] = [None] * len(enc)
        with torch.no_grad():
            for rows in enc.index_batches(run.batch_size, shuffle=False, group_by_length=run.group_by_length):
                batch = enc.batch(rows)
                labels = batch.pop("labels")  # a per-token task's say which positions are words
                with run.precision():
                    if run.forward is not None:
                        out = run.forward(rows)
                    else:
                        out = model(**{k: v.to(run.device) for k, v in batch.items()})
                    logits = getattr(out, "logits", out)  # a probe returns its logits as they are
                for i, row in zip(rows, self.row_outputs(self.outputs(logits), labels), strict=True):
                    rows_out[i] = row
        model.train(was_training)
        return self.stack(rows_out, enc.labels)

    def evaluate(
        self, model: Any, enc: Any, label_names: list[str], run: Inference, outputs: Any = None
    ) -> dict[str, Any]:
        """An evaluation of ``model`` on ``enc``: ``metrics`` of its outputs (``outputs`` when
        they were predicted already), with ``score`` and ``eval_loss``. By default the loss is
        the training loss computed from the outputs; a task whose outputs are not what its loss
        reads (strings) computes ``eval_loss`` apart, teacher-forced."""
        outputs = self.predict(model, enc, run) if outputs is None else outputs
        return self.metrics(enc.truth(), outputs, label_names)

    def search_score(
        self, model: Any, enc: Any, label_names: list[str], run: Inference
    ) -> tuple[np.ndarray, float]:
        """How the learning-rate search judges a candidate on held-out training rows: each row's
        loss (``search_losses``: lower is better, compared row by row) and the primary score,
        which it logs. From one ``predict`` by default; a task may judge by a cheaper criterion
        (a teacher-forced loss rather than generated text)."""
        outputs = self.predict(model, enc, run)
        true = enc.truth()
        return self.search_losses(true, outputs), self.score(true, outputs, label_names)

    def same_outputs(self, got: np.ndarray, want: np.ndarray, tolerance: float) -> dict[str, Any]:
        """Whether two computations of the same rows' outputs agree (a fresh-process reload, a
        merged model): ``labels_identical`` (the predictions people read), ``max_abs_diff`` and
        ``ok``. Numbers per row by default: class probabilities or a score, per-word outputs
        NaN past each sentence's end (the same positions must be NaN); the prediction is the
        largest output."""
        import numpy as np

        shaped = got.shape == want.shape and np.array_equal(np.isnan(got), np.isnan(want))
        diff = float(np.nanmax(np.abs(got - want), initial=0.0)) if shaped else float("inf")
        same = shaped and bool((np.nan_to_num(got).argmax(-1) == np.nan_to_num(want).argmax(-1)).all())
        return {"labels_identical": same, "max_abs_diff": diff, "ok": same and diff <= tolerance}

    # the export formats a run gets (``backend.artifacts.formats``), in the order they are written
    exports: ClassVar[tuple[str, ...]] = ("weights", "model_card", "merged")

    row_unit: ClassVar[str] = "rows"  # what a score's bootstrap resamples (a token task: sentences)

    def check_texts(self, rows: list[str]) -> None:
        """Refuse typed texts this task cannot predict on, with a ConfigError that says which
        (a token task: a text without words); any text by default."""
        return None

    def shown_items(self, items: list[dict[str, Any]], rows: list[str]) -> list[dict[str, Any]]:
        """Try it's items with what the task's view needs of the typed rows (a token task: the
        words, as it split them); the items as they are by default."""
        return items

    # how error analysis, Try it and Compare show a row: "label" (a label with its confidence),
    # "score" (a number and its error), "tags" (tagged words), "labels" (a set of labels, each
    # with its probability, the chosen marked: Try it's items carry ``labels``); ``ui`` has a
    # renderer per kind
    view_kind: ClassVar[str] = "label"
    predicts: ClassVar[str] = "a class per text"  # a row's prediction, in words for messages
    sorts: ClassVar[tuple[str, ...]] = ("confidence_desc", "confidence_asc", "row")

    def error_rows(
        self, frame: Any, wrong_only: bool, true_label: str | None, predicted_label: str | None, sort: str
    ) -> Any:
        """Error analysis's rows of an evaluation-predictions frame (``frame_columns``): only the
        wrong ones, of one true or predicted label, the least confident first or last, or in
        row order (``sort``, one of ``sorts``)."""
        if wrong_only:
            frame = frame[~frame["correct"]]
        if true_label:
            frame = frame[frame["true"] == true_label]
        if predicted_label:
            frame = frame[frame["predicted"] == predicted_label]
        if sort != "row":
            frame = frame.sort_values("confidence", ascending=sort == "confidence_asc", kind="stable")
        return frame

    def shown_row(self, record: dict[str, Any]) -> dict[str, Any]:
        """What error analysis draws a row with besides its columns, from its record in the
        predictions frame (a token task: the gold and predicted entities); nothing by default."""
        return {}

    def blank_targets(self, texts: list[str]) -> list[Any]:
        """Stand-in targets for texts to predict (encoding takes targets; the outputs ignore them)."""
        return [0] * len(texts)

    def row_outputs(self, outputs: torch.Tensor, labels: torch.Tensor) -> list[np.ndarray]:
        """A batch's outputs (``outputs(logits)``) split into one array per row; ``labels`` is
        the batch's labels (per-token tasks keep the positions that carry one)."""
        return list(outputs.cpu().numpy())

    def stack(self, rows: list[np.ndarray], targets: list[Any]) -> np.ndarray:
        """Rows' outputs as one array, row-major (per-word outputs are padded per sentence)."""
        import numpy as np

        return np.stack(rows) if rows else np.empty((0,))

    def truth(self, targets: list[Any]) -> np.ndarray:
        """The targets as the array ``metrics`` takes beside ``stack``'s outputs."""
        import numpy as np

        return np.asarray(targets)

    @abstractmethod
    def fits(self, names: list[str], numeric: bool) -> bool:
        """Whether a label column of these (normalised) values looks like this task's data."""

    @abstractmethod
    def label_names(
        self, names: list[str], numeric: bool, column: str, source: str, splitting: bool
    ) -> list[str]:
        """The output names of the model (classes; one name for a score). Raises DataError
        when the column cannot be this task's labels."""

    @abstractmethod
    def targets(self, names: list[str], label_names: list[str]) -> list[Any]:
        """Each row's training target (a class id, a number), for rows already checked."""

    def bad_rows(self, names: list[str]) -> list[int]:
        """Indices of label cells this task cannot read (a score that is not a number)."""
        return []

    def unknown_labels(self, names: list[str], label_names: list[str]) -> list[str]:
        """Labels of another file that a run of this task cannot be scored on (classes it never
        saw); none for a number."""
        return []

    def eval_warnings(
        self, names: list[str], rows: list[int], label_names: list[str], column: str, source: str
    ) -> list[str]:
        """What to say about an evaluation file's labels against the training ones (a DataError
        for labels the run cannot be scored on)."""
        return []

    @abstractmethod
    def strata(self, targets: list[Any]) -> list[int]:
        """A class per row for the stratified split and sample (bins for a number)."""

    @abstractmethod
    def model_kwargs(self, label_names: list[str]) -> dict[str, Any]:
        """The head's ``from_pretrained`` arguments (num_labels, id2label, problem_type)."""

    def start_head(self, head: torch.nn.Module, targets: list[Any]) -> None:
        """Set a new head's first values from the training targets (``head``: the modules the
        head is made of). Nothing for most tasks."""
        return None

    @abstractmethod
    def outputs(self, logits: torch.Tensor) -> torch.Tensor:
        """What a row's logits mean: class probabilities, a score."""

    @abstractmethod
    def metrics(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        """Every metric of ``outputs`` against ``true``, with ``score`` and ``eval_loss``."""

    @abstractmethod
    def score(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str] | None = None) -> float:
        """The primary metric alone (cheap: the learning-rate search logs it per candidate)."""

    @abstractmethod
    def row_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Each row's training loss (the learning-rate search compares candidates row by row)."""

    def search_losses(self, true: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Each held-out row's loss as the learning-rate search and the layer choice judge
        candidates by (their mean and its paired noise): the training loss by default."""
        return self.row_losses(true, outputs)

    @abstractmethod
    def baseline(self, train: list[Any], evaluation: list[Any], label_names: list[str]) -> dict[str, Any]:
        """What the trivial answer (``baseline_label``) scores on the evaluation rows, with
        ``score`` (its primary metric)."""

    @abstractmethod
    def predictions(self, outputs: np.ndarray, label_names: list[str]) -> list[Any]:
        """Each row's prediction as people read it (a label name, a number)."""

    @abstractmethod
    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The training loss of a batch (a probe head trains with it outside transformers)."""

    @abstractmethod
    def prediction_columns(self, outputs: np.ndarray, label_names: list[str]) -> dict[str, list[Any]]:
        """``predict``'s output columns (``predicted_label`` and ``probability``; ``score``)."""

    @abstractmethod
    def prediction_items(self, outputs: np.ndarray, label_names: list[str]) -> list[dict[str, Any]]:
        """Try it's answer per text: ``label`` (what to show), ``probability`` (a class's; else
        None) and ``score`` (a number's; else None)."""

    @abstractmethod
    def frame_columns(
        self, targets: list[Any], outputs: np.ndarray, label_names: list[str]
    ) -> dict[str, Any]:
        """The evaluation-predictions file's columns after row/text/pair: ``true``,
        ``predicted`` and what error analysis reads (``correct``, ``confidence``; ``error``)."""

    @abstractmethod
    def target_names(self, targets: list[Any], label_names: list[str]) -> list[str]:
        """Each target as the predictions file writes it ("true"): a class name, a number."""

    @abstractmethod
    def intervals(self, true: np.ndarray, outputs: np.ndarray, label_names: list[str]) -> dict[str, Any]:
        """``score`` and its 95% interval ``score_ci`` (plus any other headline interval)."""

    def distribution(self, names: list[str], numeric: bool) -> dict[str, int]:
        """Rows per label for the Data tab's chart (bins of a number)."""
        counts = {name: 0 for name in sorted_label_names(names, numeric)}
        for name in names:
            counts[name] += 1
        return counts

    def label_chart(self, names: list[str], numeric: bool) -> dict[str, Any]:
        """The Data tab's chart of the label column: ``title``, axis titles ``x`` and ``y``, and
        ``bars`` ([{name, count}], drawn in this order). Rows per label, by default."""
        return chart("Label distribution", "label", "rows", self.distribution(names, numeric))

    def preview(self, texts: list[str], names: list[str]) -> list[dict[str, Any]] | None:
        """The Data tab's view of a few rows when a table shows them badly (token data: each
        sentence's words, tags and entities); None: the table is the view."""
        return None

    def describe_labels(self, names: list[str], numeric: bool) -> str:
        """The Data tab's words for the label column ("2 labels")."""
        return f"{len(set(names))} labels"

    def card_outputs(self, label_names: list[str]) -> str:
        """The model card's sentence on what the model outputs."""
        return f"Outputs: {', '.join(label_names)}."

    def label_file(self) -> dict[str, Any]:
        """What ``labels.json`` holds beside ``id2label`` and ``label2id``, for a loader of the
        export (a label-set task's threshold): nothing by default."""
        return {}

    def card_predict(self, library: str, prompts_in_input: bool) -> str:
        """The model card's lines after ``out = model(**enc)`` for an export of ``library``
        (``prompts_in_input``: the method puts virtual tokens in front of the input)."""
        return self.card_output

    def baseline_text(self, baseline: dict[str, Any]) -> str:
        """The baseline in a sentence: "the baseline (spearman 0.000 by always the training mean)"."""
        return f"the baseline ({self.primary_metric} {baseline['score']:.3f} by {self.baseline_label})"

    def scoring(self, runs: list[tuple[str, Any]]) -> tuple[np.ndarray, dict[str, np.ndarray], Any, str]:
        """Runs' evaluation-predictions frames as arrays and the primary metric that pairs them
        (``backend.significance.compare_runs``); a label task's by default."""
        from backend.significance import label_scoring

        return label_scoring(runs)

    def epoch_text(self, metrics: dict[str, Any]) -> str:
        """The log's line of an evaluation: the headline metrics and the loss."""
        shown = " ".join(f"{name.replace('_', '-')} {metrics[name]:.4f}" for name in self.headline)
        return f"{shown} eval loss {metrics['eval_loss']:.4f}"

    # where an evaluation's metrics keep the table per output ({name: {precision, recall, f1,
    # support}}: per class, entity type, label), and whether the run's summary carries it too
    per_output_key: ClassVar[str] = "per_class"
    per_output_in_summary: ClassVar[bool] = False

    def per_output(self, metrics: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The table per output of an evaluation's metrics: Compare's per-class F1 chart and the
        report read it."""
        return metrics.get(self.per_output_key) or {}

    def headline_of(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """The summary's keys from the best evaluation's metrics (and the table per output)."""
        tables = (self.per_output_key,) if self.per_output_in_summary else ()
        return {name: metrics.get(name) for name in (*self.headline, *tables)}


def chart(title: str, x: str, y: str, counts: dict[str, int]) -> dict[str, Any]:
    """A bar chart for the Data tab (``Task.label_chart``): the bars in ``counts``' order."""
    return {"title": title, "x": x, "y": y, "bars": [{"name": k, "count": int(v)} for k, v in counts.items()]}
