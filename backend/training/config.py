"""The full description of one training run, as stored with jobs and artifacts."""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, dataclass, field
from typing import Any

from backend.catalogue import DEFAULT_MODEL
from backend.data.prepare import PreparedData, prepare
from backend.errors import ConfigError
from backend.knobs import check_range, knob, unknown_settings
from backend.methods import registry
from backend.tasks import registry as tasks

QUANT_CHOICES = ("none", "8bit", "4bit")
# auto = bf16 where the hardware does it natively (backend/training/runtime.py decides).
PRECISIONS = ("auto", "fp32", "bf16")
# auto = on for base models over runtime.CHECKPOINTING_PARAMS parameters.
CHECKPOINTING = ("auto", "on", "off")
AUTO = "auto"


def parse_auto(name: str, value: Any, kind: type) -> Any:
    """``"auto"``, None (the method's fixed default) or a number of ``kind``.

    Numbers typed as text (the CLI, a JSON client) are accepted; anything else is a
    ConfigError that says what is allowed.
    """
    if value is None or value == AUTO:
        return value
    what = "an integer" if kind is int else "a number"
    wrong = ConfigError(f"{name} must be 'auto' or {what}, not {value!r}")
    if isinstance(value, bool):
        raise wrong
    try:
        number = float(value) if isinstance(value, str) else value
    except ValueError:
        raise wrong from None
    if not isinstance(number, int | float) or (kind is int and number != int(number)):
        raise wrong
    return kind(number)


def column_knob(role: str) -> Any:
    """The setting that chooses a role's column, with the role's label and help."""
    found = next(r for r in tasks.all_roles() if r.key == role)
    return knob(None, found.label, found.help)


@dataclass
class TrainConfig:
    """Everything needed to reproduce a run. JSON-serialisable via :meth:`to_dict`.

    Each setting carries its label, range and help (:func:`knob`): ``validate`` checks the
    ranges, the UI's controls and the CLI's flags are made from the same metadata.
    """

    data: str = knob(MISSING, "Training data", "Training file (CSV, TSV, JSONL/JSON, Parquet).")
    method: str  # a key of backend.methods.registry (its own list of choices)
    eval_data: str | None = knob(
        None,
        "Evaluation data",
        "Optional evaluation file; otherwise a stratified split of the training data.",
    )
    # One setting per column role of the tasks (``backend.tasks.base.Role``), its label and help
    # the role's: ``tests/unit/test_tasks.py`` checks that every role has its field here.
    text_column: str | None = column_knob("text")
    text_pair_column: str | None = column_knob("text_pair")
    label_column: str | None = column_knob("label")
    score_column: str | None = column_knob("score")
    tokens_column: str | None = column_knob("tokens")
    tags_column: str | None = column_knob("tags")
    tag_field: str | None = knob(
        None,
        "CoNLL-U tag field",
        "Which field of a CoNLL-U file is the tag: upos (default), xpos, or a MISC key such as NER.",
    )
    task: str = knob(
        tasks.AUTO,
        "Task",
        "What the model learns to output. auto: token classification for a list of words and tags per "
        "row (JSONL lists, CoNLL, CoNLL-U), multi-label for label sets (a list per row, names joined by "
        "; | or ,, one 0/1 column per label), regression for a label column of numbers with at least "
        f"{tasks.MANY_VALUES} distinct values and some not whole, else classification; choose one "
        "to override (a 1-5 star column is classes unless you say regression).",
        choices=(tasks.AUTO, *tasks.keys()),
        choice_labels=("auto (from the data)", *(t.label for t in tasks.all_tasks())),
    )
    model: str = knob(
        DEFAULT_MODEL,
        "Base model",
        "The offline default, a folder in models_cache/, or a Hugging Face hub id (needs internet).",
    )
    method_config: dict[str, Any] = field(default_factory=dict)
    # the task's own settings (``Task.settings_cls``: the tag scheme...), checked against the task
    task_config: dict[str, Any] = field(default_factory=dict)
    quant: str = knob(
        "none",
        "Quantization",
        "Load the base model in 8 or 4 bits; only a method that keeps the base frozen can train on it.",
        choices=QUANT_CHOICES,
        choice_labels=("none", "8-bit", "4-bit"),
    )
    # "auto": sized from the data (enough optimizer steps); None: the method's fixed default.
    epochs: int | str | None = knob(
        AUTO,
        "Epochs",
        "'auto' (default: enough optimizer steps for the data, with early stopping) or a number.",
        min=1,
        max=1000,  # probes on cached features may want hundreds; the range only stops typos
        step=1,
    )
    batch_size: int = knob(32, "Batch size", "Examples per forward pass.", min=1, max=4096, step=1)
    grad_accum: int = knob(
        1, "Gradient accumulation", "Batches per optimizer step (a larger effective batch).", min=1, step=1
    )
    # "auto": a short search on the training data picks it; None: the method's fixed default.
    lr: float | str | None = knob(
        AUTO,
        "Learning rate",
        "'auto' (default: a short search on the training data picks it) or a number, e.g. 2e-3.",
        min=0,
        exclusive=("min",),
    )
    weight_decay: float = knob(0.01, "Weight decay", "AdamW weight decay.", min=0.0)
    warmup_ratio: float = knob(
        0.1,
        "Warmup ratio",
        "Share of the optimizer steps over which the learning rate warms up.",
        min=0.0,
        max=1.0,
        exclusive=("max",),
    )
    max_grad_norm: float = knob(
        1.0, "Max gradient norm", "Gradients are clipped to this norm.", min=0.0, exclusive=("min",)
    )
    early_stopping_patience: int = knob(
        3,
        "Early stopping patience",
        "Stop after this many epochs without improvement on the evaluation set (0: never).",
        min=0,
        step=1,
        flag="patience",
    )
    max_length: int = knob(
        128,
        "Max length",
        "Tokens per example; longer ones are truncated (the Data tab shows your data's lengths).",
        min=8,
        max=8192,
        step=8,
    )
    max_train_samples: int | None = knob(
        None, "Max training rows", "Train on at most this many rows (default: all).", min=1
    )
    eval_fraction: float = knob(
        0.1,
        "Held-out fraction",
        "Share of the training data held out for evaluation when no evaluation file is given.",
        min=0.0,
        max=1.0,
        exclusive=("min", "max"),
    )
    drop_invalid: bool = knob(False, "Drop invalid rows", "Drop rows with a missing text or label.")
    group_by_length: bool = knob(
        True,
        "Group by length",
        "Batch rows of similar length together (far less padding, same shuffled epochs); "
        "off: plain random batches.",
    )
    precision: str = knob(
        "auto",
        "Precision",
        "auto: bf16 autocast where the hardware has it (CPUs with AVX-512 BF16 or AMX, most GPUs; "
        "fp16 with loss scaling on older GPUs), else fp32. Weights and exports stay fp32.",
        choices=PRECISIONS,
    )
    gradient_checkpointing: str = knob(
        AUTO,
        "Gradient checkpointing",
        "Recompute each layer's activations in the backward pass instead of keeping them: much "
        "less memory for one more forward pass per step (steps take 1.3-1.5x as long). auto: on "
        "for base models over 100M parameters. Prefix tuning and probing always train without.",
        choices=CHECKPOINTING,
    )
    seed: int = knob(0, "Seed", "Random seed of the split, the initialisation and the batch order.", min=0)
    device: str = knob("auto", "Device", "auto, cpu or cuda[:N].")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        unknown = unknown_settings(cls, values)
        if unknown:
            raise ConfigError(f"unknown training settings: {', '.join(unknown)}")
        return cls(**values)

    @property
    def effective_lr(self) -> float:
        """The learning rate to train with; "auto" must have been resolved (see backend.training.autotune)."""
        if self.lr == AUTO:
            raise RuntimeError("learning rate 'auto' is resolved before training starts")
        return float(self.lr) if self.lr is not None else registry.get(self.method).default_lr

    @property
    def lr_scales(self) -> dict[str, float]:
        """Learning-rate multipliers by weight-name part that the method asks for (MethodSpec.lr_scales)."""
        return registry.get(self.method).learning_rate_scales(self.method_settings())

    @property
    def effective_epochs(self) -> int:
        """The epoch count to train for; "auto" must have been resolved (see backend.training.autotune)."""
        if self.epochs == AUTO:
            raise RuntimeError("epochs 'auto' are resolved before training starts")
        return int(self.epochs) if self.epochs is not None else registry.get(self.method).default_epochs

    def method_settings(self) -> Any:
        """The method's typed Config (validated)."""
        return registry.get(self.method).make_config(self.method_config)


def validate(cfg: TrainConfig) -> None:
    """Reject impossible or unsupported settings before anything heavy runs.

    Ranges and choices come from the settings' metadata (:func:`check_range`); the rules
    here are the ones a range cannot say.
    """
    spec = registry.get(cfg.method)
    cfg.method_settings()
    check_task_settings(cfg.task, cfg.task_config)
    if cfg.task not in (tasks.AUTO, None, ""):  # "auto": asked again once the data says the task
        spec.check_task(tasks.get(cfg.task))
    cfg.epochs = parse_auto("epochs", cfg.epochs, int)
    cfg.lr = parse_auto("learning rate", cfg.lr, float)
    check_range(cfg)
    if cfg.quant != "none" and not spec.quantizable:
        raise ConfigError(
            f"{spec.label} updates every weight, which cannot be done on a {cfg.quant} quantized base; "
            "choose quantization 'none' or a method that keeps the base frozen (e.g. LoRA)"
        )
    if cfg.gradient_checkpointing == "on" and not spec.gradient_checkpointing:
        raise ConfigError(f"{spec.label} cannot train with gradient checkpointing; set it to 'auto' or 'off'")
    if cfg.device not in ("auto", "cpu") and not cfg.device.startswith("cuda"):
        raise ConfigError(f"device must be auto, cpu or cuda[:N], not '{cfg.device}'")


def check_task_settings(task: str, values: dict[str, Any]) -> None:
    """A named task's settings are checked against it; with "auto" each must be some task's (the
    task the data turns out to be checks them again when the data is read)."""
    if task not in (tasks.AUTO, None, ""):
        tasks.get(task).configured(values)
        return
    known = {f.name for t in tasks.all_tasks() for f in dataclasses.fields(t.settings_cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"no task has the setting(s) {', '.join(repr(u) for u in unknown)}")


def load_data(cfg: TrainConfig, *, max_rows: int | None = None) -> PreparedData:
    """The run's data exactly as training will see it (the same checks, split and limits).

    Each file is read once; ``spec`` and ``eval_spec`` of the result describe them (hash,
    mapping, counts) for whoever stores them. ``max_rows`` adds the app's row limit.
    """
    chosen: dict[str, dict[str, str]] = {}  # slot -> the options that chose its column -> column
    for role in tasks.all_roles():
        if value := getattr(cfg, role.option):
            chosen.setdefault(role.slot, {})[role.option] = value
    if cfg.tag_field:  # a CoNLL-U file's tag field is read into a column of that name
        chosen.setdefault("label", {})["tag_field"] = cfg.tag_field
    for slot, options in chosen.items():
        if len(set(options.values())) > 1:
            what = slot.replace("_", " ")
            raise ConfigError(f"give one of {', '.join(options)}, not several: each names the {what} column")
    picked = {slot: next(iter(options.items())) for slot, options in chosen.items()}
    text_option, text = picked.get("text", ("text_column", None))
    pair_option, pair = picked.get("text_pair", ("text_pair_column", None))
    label_option, label = picked.get("label", ("label_column", None))
    return prepare(
        cfg.data,
        cfg.eval_data,
        task=tasks.resolve_key(
            cfg.task, [o for options in chosen.values() for o in options], [*cfg.task_config]
        ),
        text_column=text,
        text_pair_column=pair,
        label_column=label,
        eval_fraction=cfg.eval_fraction,
        seed=cfg.seed,
        drop_invalid=cfg.drop_invalid,
        max_train_samples=cfg.max_train_samples,
        max_rows=max_rows,
        options=(text_option, pair_option, label_option),
        task_config=cfg.task_config,
    )
