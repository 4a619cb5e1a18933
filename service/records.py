"""The records the Workbench returns: one TypedDict per shape, re-exporting the job layer's.

They stay plain dicts (JSON for gradio_client and ``--json``); the names say which keys a
caller can count on. ``jobs.records`` holds what the job layer builds (datasets, job rows,
comparison rows); the rest is built here in the service or in the backend and annotated
here. ``tests/jobs/test_records.py`` checks every record against the dicts really built.

No ``from __future__ import annotations``: see ``jobs.records``.
"""

from typing import Any, TypedDict

from jobs.records import (
    ColumnMapping,
    CompareRow,
    ConfigDifference,
    Confusion,
    DatasetFields,
    DatasetInfo,
    DatasetRemoval,
    JobDetail,
    JobRow,
    LearningRate,
    MajorityRow,
    Series,
)

__all__ = [
    "ColumnMapping",
    "CompareResult",
    "CompareRow",
    "ConfigDifference",
    "Confusion",
    "DatasetFields",
    "DatasetInfo",
    "DatasetPreview",
    "DatasetRemoval",
    "DeviceInfo",
    "DiskUsage",
    "FieldInfo",
    "HistogramBin",
    "JobDetail",
    "JobRow",
    "LabelProbability",
    "LearningRate",
    "MajorityRow",
    "MethodInfo",
    "ModelFacts",
    "ParameterCount",
    "Prediction",
    "PublicDataset",
    "RoleInfo",
    "RunPlan",
    "RunSummary",
    "Series",
    "TaskInfo",
]


class PublicDataset(DatasetFields):
    """A dataset as the public endpoints return it: ``path`` renamed ``stored_file``
    (gradio_client would take a dict with a string "path" for a file to download)."""

    stored_file: str


class HistogramBin(TypedDict):
    """Rows whose token length lies in [start, end)."""

    start: int
    end: int
    count: int


class ChartBar(TypedDict):
    name: str
    count: int


class LabelChart(TypedDict):
    """The Data tab's chart of the label column, as the task sees it (``Task.label_chart``)."""

    title: str  # "Label distribution", "Score distribution", "Entities per type (O: 91.2% of ...)"
    x: str  # the axis titles
    y: str
    bars: list[ChartBar]  # drawn in this order (numeric bins lowest first, tags by count)


class DatasetPreview(TypedDict):
    """``Workbench.dataset_preview``: the overview ``backend.data.stats.dataset_stats`` builds."""

    rows: int
    columns: list[str]
    mapping: ColumnMapping
    task: str  # the task "auto" would train (backend.tasks)
    task_label: str
    label_text: str  # the task's words for the labels ("2 labels", "a number per row ...")
    label_counts: dict[str, int]  # usable rows only (bins of a score)
    label_chart: LabelChart
    invalid_rows: int
    preview: list[dict[str, Any]]  # the first rows, as read
    tagged: list[dict[str, Any]] | None  # token data: the first sentences' words, tags, entities
    char_length: dict[str, int]  # p50, p90, p95, p99, max
    token_length: dict[str, int] | None  # the same; None without a tokenizer
    token_histogram: list[HistogramBin] | None
    token_lengths_sampled: int | None  # the sample's size when token lengths come from one


class DiskUsage(TypedDict):
    """Bytes under the data folder (``Workbench.disk_usage``)."""

    datasets: int
    artifacts: int
    exports: int
    cache: int  # probe features and uploads on their way in
    total: int  # the whole folder: the database and anything else too


class FieldInfo(TypedDict):
    """One setting of a method or of every run, with what a form control or a CLI flag needs
    (``backend.methods.base.fields_info``)."""

    name: str
    label: str
    help: str
    type: str  # bool, int, float or str
    accepts_text: bool  # a number that may also be a word ("auto")
    default: Any
    required: bool  # no default: the caller must give it
    min: float | None
    max: float | None
    step: float | None
    choices: list[Any] | None
    choice_labels: list[str] | None  # how the choices are shown, in their order
    exclusive: list[str]  # "min" and/or "max": bounds the value may not equal
    flag: str  # the CLI flag's name
    value_words: dict[str, Any]  # words that stand for a value ("auto": -2): CLI words, run names


class RoleInfo(TypedDict):
    """A column a task's files have (``backend.tasks.base.Role``)."""

    key: str
    slot: str  # the row's cell it fills: "text", "text_pair" or "label"
    label: str
    help: str
    option: str  # the setting and flag that choose it: "score_column", --score-column
    required: bool


class TaskInfo(TypedDict):
    """A task of the catalogue (``Workbench.list_tasks``): what a model learns to output."""

    key: str
    label: str
    description: str
    fields: list[FieldInfo]  # the task's own settings (``Task.settings_cls``), as a method's
    roles: list[RoleInfo]  # its columns: the Data tab labels its pickers with them


class MethodInfo(TypedDict):
    """A training method of the catalogue (``Workbench.list_methods``)."""

    key: str
    label: str
    description: str
    library: str
    default_lr: float
    default_epochs: int
    freezes_base: bool
    quantizable: bool  # may train on a 4/8-bit quantized base
    mergeable: bool  # its update can be folded into the base weights
    resumable: bool  # a failed run resumes from its last checkpoint
    probes_layers: bool  # trains heads on cached layer features (the Probing tab)
    default: bool  # the method a form starts with
    fields: list[FieldInfo]
    refused_tasks: dict[str, str]  # task key -> why this method cannot train it


class ParameterCount(TypedDict):
    """Trainable and total parameters of a model set up for a method."""

    trainable: int
    total: int
    percent: float  # trainable, as a percentage of total
    text: str  # one line for people


class ModelFacts(TypedDict):
    """What the model picker says about one base model (``Workbench.model_facts``)."""

    model: str
    hub_id: str | None  # the name exports carry; None for a local folder
    architecture: str  # "encoder" or "decoder"
    model_type: str  # the transformers model type, e.g. "bert", "llama"
    total_params: int  # the model's size (with a fresh head for num_labels, without the method)
    trainable_params: int  # for the method asked about
    # estimated training peak (MB) with the base in fp32 ("none"), "8bit" and "4bit", for the
    # method, batch size and max length asked about; None: the method cannot train on it
    memory_mb: dict[str, float | None]
    device: str  # "cuda" or "cpu": where runs train
    available_mb: float  # GPU memory on cuda, else RAM
    fits: dict[str, bool]  # the same keys as memory_mb
    gradient_checkpointing: bool  # whether the estimate assumes it (the setting, resolved)
    text: str  # one Markdown line for people


class RunPlan(TypedDict):
    """What a launch would do (``Workbench.plan_run``; built by ``backend.training.autotune``)."""

    train_rows: int
    epochs: int
    steps_per_epoch: int
    total_steps: int
    lr_candidates: list[float]  # empty unless the learning rate is "auto"
    search_share: float  # the search's budget against the planned training time (0: no search)
    text: str  # one Markdown line for people


class DeviceInfo(TypedDict):
    """Where jobs will train."""

    device: str  # cuda or cpu
    gpus: int
    name: str
    precision: str  # what precision "auto" means there, in words


class RunSummary(TypedDict):
    """A job just queued (what /launch returns)."""

    id: int
    name: str
    method: str  # the method's key
    status: str


class CompareResult(TypedDict):
    """Jobs side by side (``Workbench.compare``); every dict below is keyed by job id."""

    table: list[CompareRow]
    baselines: list[MajorityRow]
    series: dict[int, Series]
    config_diff: list[ConfigDifference]
    per_class_f1: dict[int, dict[str, float] | None]  # None: the job has no evaluation yet
    confusion: dict[int, Confusion | None]
    # Every run against the best on the same evaluation rows (backend.significance.compare_runs,
    # keyed "job ID"); None with ``significance_note`` saying why not (one run, different rows).
    significance: dict[str, Any] | None
    significance_note: str | None
    # Compared runs that differ only in seed, one entry per group (``jobs.views.pooled_seeds``):
    # jobs, name, n, seeds, task, primary_metric, headline; the means of score and of each
    # headline metric (accuracy, macro_f1; spearman, ...) with their sd as <metric>_sd.
    pooled_seeds: list[dict[str, Any]]


class LabelProbability(TypedDict):
    """One text's prediction: its label and probability; for a regression run the number, as
    text in ``label`` and as ``score`` (``probability`` None)."""

    label: str
    probability: float | None
    score: float | None


class Prediction(TypedDict):
    """One job's predictions for the texts asked about, in their order (``Workbench.predict``)."""

    id: int
    name: str
    view: str  # how its rows are shown, its task's ``view_kind``: "label", "score", "tags"
    predictions: list[LabelProbability]
