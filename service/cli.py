"""Command line: ``python app.py train|predict|export|submit|jobs|... `` (the headless contract).

Job commands (submit, jobs, show, cancel, resume, delete, worker) live in
``service.cli_jobs``; ``--db-url`` picks the job database.

Progress goes to stderr; ``train`` ends with one JSON object as the last line of stdout.
Exit codes: 0 success, 2 bad input (one ``error: ...`` line, no traceback), 1 other failure.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from backend.errors import WorkbenchError
from backend.settings import Settings
from backend.training.callbacks import Callback, EpochInfo, StepInfo
from service.cli_jobs import JOB_COMMANDS, add_job_commands, export_job

METHOD_KEYS = ("probe", "full", "lora", "prompt", "prefix", "ptuning", "adapter", "ia3")
# CLI shortcuts for the knobs users move most: flag -> (method config field, methods it applies to)
KNOB_FLAGS = {
    "rank": ("rank", {"lora"}),
    "prompt_length": ("prompt_length", {"prompt", "prefix", "ptuning"}),
    "bottleneck": ("bottleneck", {"adapter"}),
}


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The training flags (shared by ``train`` and ``submit``)."""
    p.add_argument("--data", required=True, help="training file (CSV, TSV, JSONL/JSON, Parquet)")
    p.add_argument("--eval-data", help="optional evaluation file; otherwise a stratified split")
    p.add_argument("--text-column")
    p.add_argument("--text-pair-column", help="second text column for sentence pairs")
    p.add_argument("--label-column")
    p.add_argument("--model", default="all-MiniLM-L6-v2", help="catalogue name, folder or hub id")
    p.add_argument("--method", required=True, choices=METHOD_KEYS)
    p.add_argument("--rank", type=int, help="LoRA rank")
    p.add_argument("--prompt-length", type=int, help="prompt / prefix / P-tuning length")
    p.add_argument("--bottleneck", type=int, help="bottleneck adapter size")
    p.add_argument("--layer", help="probe layer: -1 = last, 0 = embeddings, or 'all' for a sweep")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other method setting, e.g. --set pooling=cls --set placement=parallel",
    )
    p.add_argument("--quant", default="none", choices=("none", "8bit", "4bit"))
    p.add_argument(
        "--epochs",
        default="auto",
        help="'auto' (default: enough optimizer steps for the data, with early stopping) or a number",
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument(
        "--lr",
        default="auto",
        help="'auto' (default: a short search on the training data picks it) or a number, "
        "e.g. 2e-3; 'default' uses the method's fixed default",
    )
    p.add_argument(
        "--patience",
        type=int,
        default=3,
        help="stop after this many epochs without improvement on the evaluation set (0: never)",
    )
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--max-train-samples", type=int)
    p.add_argument("--eval-fraction", type=float, default=0.1)
    p.add_argument("--drop-invalid", action="store_true", help="drop rows with missing text/label")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto, cpu or cuda[:N]")


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def method_config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Collect method settings from the shortcut flags and ``--set``; reject misapplied flags."""
    from backend.errors import ConfigError

    values: dict[str, Any] = {}
    for flag, (field, methods) in KNOB_FLAGS.items():
        value = getattr(args, flag)
        if value is None:
            continue
        if args.method not in methods:
            raise ConfigError(
                f"--{flag.replace('_', '-')} applies to {', '.join(sorted(methods))}, not {args.method}"
            )
        values[field] = value
    if args.layer is not None:
        if args.method != "probe":
            raise ConfigError(f"--layer applies to probe, not {args.method}")
        if args.layer == "all":
            values["sweep_layers"] = True
        else:
            try:
                values["layer"] = int(args.layer)
            except ValueError:
                raise ConfigError(f"--layer must be an integer or 'all', not '{args.layer}'") from None
    for item in args.set:
        if "=" not in item:
            raise ConfigError(f"--set expects KEY=VALUE, got '{item}'")
        key, _, raw = item.partition("=")
        values[key.strip()] = _parse_value(raw.strip())
    return values


def train_config_from_args(args: argparse.Namespace) -> Any:
    from backend.training.config import TrainConfig

    return TrainConfig(
        data=args.data,
        eval_data=args.eval_data,
        text_column=args.text_column,
        text_pair_column=args.text_pair_column,
        label_column=args.label_column,
        model=args.model,
        method=args.method,
        method_config=method_config_from_args(args),
        quant=args.quant,
        epochs=args.epochs,
        batch_size=args.batch_size,
        grad_accum=args.grad_accum,
        lr=None if args.lr == "default" else args.lr,
        early_stopping_patience=args.patience,
        max_length=args.max_length,
        max_train_samples=args.max_train_samples,
        eval_fraction=args.eval_fraction,
        drop_invalid=args.drop_invalid,
        seed=args.seed,
        device=args.device,
    )


class StderrProgress(Callback):
    """Human progress on stderr: a line every ~10% of steps and after each epoch."""

    def __init__(self) -> None:
        self.every = 1

    def on_start(self, info: dict[str, Any]) -> None:
        total = info.get("total_steps") or 0
        self.every = max(1, total // 10)
        print(f"start: {json.dumps(info)}", file=sys.stderr, flush=True)

    def on_step(self, info: StepInfo) -> None:
        if info.step % self.every == 0 or info.step == info.total_steps:
            print(
                f"step {info.step}/{info.total_steps} epoch {info.epoch} loss {info.loss:.4f} "
                f"lr {info.lr:.2e} {info.samples_per_second:.1f} samples/s",
                file=sys.stderr,
                flush=True,
            )

    def on_epoch(self, info: EpochInfo) -> None:
        m = info.metrics
        print(
            f"eval {info.epoch}/{info.total_epochs}: accuracy {m['accuracy']:.4f} macro-F1 "
            f"{m['macro_f1']:.4f} loss {m['eval_loss']:.4f}{' (best)' if info.is_best else ''}",
            file=sys.stderr,
            flush=True,
        )

    def on_log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)


def cmd_train(args: argparse.Namespace, settings: Settings) -> int:
    from backend.run import run_training

    cfg = train_config_from_args(args)
    summary = run_training(
        cfg,
        Path(args.out),
        StderrProgress(),
        models_cache=settings.models_cache,
        feature_cache_dir=settings.feature_cache_dir,
    )
    print(json.dumps(summary))
    return 0


def cmd_predict(args: argparse.Namespace, settings: Settings) -> int:
    import pandas as pd

    from backend.artifacts.csv_safe import write_csv
    from backend.artifacts.load import Predictor
    from backend.data.prepare import read_table
    from backend.errors import DataError

    predictor = Predictor(args.artifact)
    df = read_table(args.data)
    manifest = predictor.manifest
    text_col = args.text_column or manifest.get("text_column") or "text"
    pair_col = args.text_pair_column or manifest.get("text_pair_column")
    for col in filter(None, (text_col, pair_col)):
        if col not in df.columns:
            raise DataError(
                f"{args.data}: no column '{col}'; columns found: {', '.join(map(str, df.columns))}. "
                "Use --text-column / --text-pair-column."
            )
    texts = df[text_col].astype(str).tolist()
    pairs = df[pair_col].astype(str).tolist() if pair_col else None
    preds = predictor.predict(texts, pairs)
    out = pd.DataFrame(
        {
            text_col: texts,
            "predicted_label": [p[0] for p in preds],
            "probability": [round(p[1], 6) for p in preds],
        }
    )
    write_csv(out, args.out)  # formula-like cells quoted: people open this in a spreadsheet
    print(f"wrote {len(out)} predictions to {args.out}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """``export ID --out FILE.zip`` (a job) or ``export --artifact DIR --out FILE.zip``."""
    from backend.artifacts.export import export_zip
    from backend.errors import ConfigError

    if (args.job is None) == (args.artifact is None):
        raise ConfigError("export takes a job id or --artifact DIR (one of the two)")
    if args.job is not None:
        return export_job(args.job, args.out, settings, args.include_samples)
    if not args.out:
        raise ConfigError("export --artifact needs --out FILE.zip")
    path = export_zip(args.artifact, args.out, include_samples=args.include_samples)
    print(json.dumps({"zip": str(path), "bytes": path.stat().st_size}))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python app.py", description="Adaptation workbench. With no command, serves the web app."
    )
    parser.add_argument(
        "--db-url", help="job database URL (default: WORKBENCH_DB_URL or sqlite:///<data dir>/workbench.db)"
    )
    # The same option after the command too; SUPPRESS keeps a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db-url", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")
    train = sub.add_parser("train", help="train one run in this process (headless)")
    add_train_arguments(train)
    train.add_argument("--out", required=True, help="run folder to write")
    predict = sub.add_parser("predict", help="predict labels for a file with a trained run")
    predict.add_argument("--artifact", required=True, help="run folder")
    predict.add_argument("--data", required=True)
    predict.add_argument("--text-column")
    predict.add_argument("--text-pair-column")
    predict.add_argument("--out", required=True, help="CSV to write")
    export = sub.add_parser(
        "export", parents=[common], help="pack a job's model (or a run folder) into a zip"
    )
    export.add_argument("job", type=int, nargs="?", help="job id")
    export.add_argument("--artifact", help="a run folder instead of a job")
    export.add_argument("--out", help="zip to write (jobs default to <data dir>/exports/)")
    export.add_argument(
        "--include-samples",
        action="store_true",
        help="also pack up to 64 evaluation texts with their predictions (left out by default)",
    )
    add_job_commands(sub, common, add_train_arguments)
    return parser


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "train": cmd_train,
    "predict": cmd_predict,
    "export": cmd_export,
    **JOB_COMMANDS,
}


def run_command(args: argparse.Namespace, settings: Settings) -> int:
    """Dispatch with the exit-code contract: 2 + one line for user errors, 1 otherwise."""
    try:
        return COMMANDS[args.command](args, settings)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 - last resort: keep the traceback for bug reports
        traceback.print_exc()
        return 1
