"""The records the job layer builds for the API: datasets, job rows and details, comparisons.

TypedDicts, so they stay the plain JSON dicts gradio_client users and the CLI's ``--json``
get; the names only tell a reader (and a type checker) which keys to expect. The
builders are :mod:`jobs.datasets` and :mod:`jobs.views`; ``tests/jobs/test_records.py``
fails when a builder's keys and its record drift apart. ``service.records`` re-exports
these beside the records the service builds itself.

No ``from __future__ import annotations`` here: TypedDict reads ``NotRequired`` from the
evaluated annotations (Python 3.11 counts a string "NotRequired[...]" as required), and
gradio resolves the endpoint hints at run time.
"""

from typing import Any, NotRequired, TypedDict

# Training curves by name ("train_loss", "eval_accuracy", "layer_accuracy", ...): [[x, value]],
# x the step, the epoch or, for a probe sweep's layer series, the layer (0 = embeddings).
Series = dict[str, list[list[float]]]


class ColumnMapping(TypedDict):
    """Which columns of a table hold the text, the optional second text and the label."""

    text: str
    text_pair: str | None
    label: str


class DatasetFields(TypedDict):
    """What every view of a registered dataset shows (the stored file's path aside)."""

    id: int
    name: str
    sha256: str
    rows: int
    columns: list[str]
    mapping: ColumnMapping
    label_counts: dict[str, int]
    invalid_rows: int  # rows with a missing mapped cell (training drops them)
    created: str  # ISO 8601, UTC


class DatasetInfo(DatasetFields):
    """A registered dataset (``jobs.datasets.as_dict``)."""

    path: str  # the stored copy on the server


class DatasetRemoval(TypedDict):
    """What deleting a dataset did (``jobs.datasets.remove``)."""

    id: int
    deleted: bool
    file_removed: bool  # False while another dataset row uses the same stored file


class JobRow(TypedDict):
    """A job in the list (``jobs.views.job_row``)."""

    id: int
    name: str
    status: str  # queued, running, succeeded, failed or cancelled
    method: str
    model: str
    quant: str
    dataset: str | None  # None once the dataset is deleted
    dataset_id: int | None
    eval_dataset_id: int | None  # None: a split of the training data
    knobs: str  # the method's key setting and every changed one, e.g. "r=8"
    progress: float  # 0..1
    epoch: int | None
    total_epochs: int | None
    step: int | None
    total_steps: int | None
    eta_seconds: float | None
    task: str  # backend.tasks key (the default for runs from before tasks)
    primary_metric: str  # the task's: what ``score`` holds
    headline: list[str]  # the task's headline metrics (keys of the summary)
    score: float | None
    accuracy: float | None  # classification's (None for other tasks)
    macro_f1: float | None
    created: str  # ISO 8601, UTC
    started: str | None
    finished: str | None
    error: str | None  # what the user reads
    learning_flag: str | None  # set when a run ended without learning
    resumed_from: int | None
    rerun_of: int | None  # launched from that job's settings ("run again")
    cancel_requested: bool
    where: str | None  # node and device, e.g. "node-3 · GPU 1" (jobs.views.where)


class JobDetail(JobRow):
    """One job in full (``jobs.views.job_detail``): the row plus config, results and log."""

    config: dict[str, Any]  # TrainConfig.to_dict()
    metrics: dict[str, Any] | None  # the run's summary
    evaluation: dict[str, Any] | None  # best epoch: per_class, labels, confusion_matrix
    device: str | None
    worker_pid: int | None
    worker_host: str | None
    artifact_dir: str | None
    error_kind: str | None  # user, memory, crash, internal
    error_detail: str | None  # traceback, for bug reports
    checkpoint_epoch: int | None
    heartbeat: str | None
    log_path: str | None
    log: list[str]  # the last lines asked for
    series: Series
    # jobs.schema.METRIC_COLUMNS beyond score, accuracy and macro_f1 (already in the row)
    eval_loss: float | None
    trainable_params: int | None
    total_params: int | None
    train_seconds: float | None
    peak_rss_mb: float | None
    adapter_bytes: int | None
    layer_accuracy: NotRequired[list[dict[str, Any]]]  # probe sweeps only: one entry per layer
    lr_search: dict[str, Any] | None  # the automatic learning-rate search, when one ran


class CompareRow(TypedDict):
    """One run in the comparison table (``jobs.views.compare_row``)."""

    id: int
    name: str
    method: str
    knobs: str
    task: str
    primary_metric: str
    headline: list[str]
    score: float | None
    accuracy: float | None
    macro_f1: float | None
    trainable_params: int | None
    train_seconds: float | None
    peak_rss_mb: float | None
    adapter_bytes: int | None
    quant: str
    status: str
    trainable_percent: float | None
    lr: float | str | None  # "auto" in the config until the search has chosen
    lr_auto: bool  # chosen by the automatic search
    learning_flag: str | None
    lr_choice_warning: str | None  # the search's choice is in doubt (backend.training.lr_warning)
    score_ci: list[float] | None  # 95% bootstrap interval of the score (None: a run before it)
    macro_f1_ci: list[float] | None


class LearningRate(TypedDict):
    """The learning rate a run trained with (``jobs.views.learning_rate``)."""

    lr: float | str | None
    lr_auto: bool


class ConfigDifference(TypedDict):
    """One config field that differs between compared runs (``jobs.views.config_diff``)."""

    field: str  # dotted, e.g. "method_config.rank"
    values: dict[int, Any]  # job id -> its value


class MajorityRow(TypedDict):
    """The trivial baseline of one evaluation set (``jobs.views.majority_rows``): the majority
    class for labels, the training mean for scores, every word 'O' for tags."""

    jobs: list[int]  # the compared runs evaluated on this set
    task: str
    primary_metric: str  # what ``score`` holds
    label: str  # what the baseline does, the task's words ("always the majority class")
    score: float | None  # its primary metric
    label_id: int | None  # the majority class (labels only)
    accuracy: float | None  # labels only
    macro_f1: float | None  # labels only


class Confusion(TypedDict):
    """A confusion matrix at the best epoch (``jobs.views.confusion``): rows true, columns predicted."""

    labels: list[str]
    matrix: list[list[int]]
