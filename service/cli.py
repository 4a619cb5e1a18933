"""Command line: ``python app.py train|predict|export|submit|jobs|... `` (the headless contract).

Job commands (submit, jobs, show, cancel, resume, delete, worker) live in
``service.cli_jobs``; ``--db-url`` picks the job database. The training flags of
``train`` and ``submit`` are made from the settings' metadata in ``service.cli_args``.

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

from backend.errors import ConfigError, DataError, WorkbenchError
from backend.settings import Settings
from backend.training.callbacks import Callback, EpochInfo, StepInfo
from service.cli_args import add_train_arguments, train_config_from_args
from service.cli_jobs import JOB_COMMANDS, add_job_commands, export_job
from service.cli_jobs import _bench as job_bench
from service.cli_runner import add_runner_arguments
from service.cli_sweep import add_sweep_command, cmd_sweep


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
        names = {"macro_f1": "macro-F1", "eval_loss": "loss"}
        shown = " ".join(f"{names.get(k, k)} {v:.4f}" for k, v in info.scalars.items())
        print(
            f"eval {info.epoch}/{info.total_epochs}: {shown}{' (best)' if info.is_best else ''}",
            file=sys.stderr,
            flush=True,
        )

    def on_log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)


def cmd_train(args: argparse.Namespace, settings: Settings) -> int:
    from backend.run import run_training  # deferred: torch loads only for commands that train

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
    # Deferred for start-up: pandas, torch and transformers load only for this command.
    import pandas as pd

    from backend.artifacts.csv_safe import write_csv
    from backend.artifacts.load import Predictor
    from backend.data.read import read_table

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
    texts = [predictor.task.text_of(cell) for cell in df[text_col].tolist()]  # words of a list, as read
    pairs = df[pair_col].astype(str).tolist() if pair_col else None
    out = pd.DataFrame({text_col: texts, **predictor.predict_columns(texts, pairs)})
    write_csv(out, args.out)  # formula-like cells quoted: people open this in a spreadsheet
    print(f"wrote {len(out)} predictions to {args.out}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    """``export ID --out FILE.zip`` (a job) or ``export --artifact DIR --out FILE.zip``."""
    from backend.artifacts.export import export_zip

    if (args.job is None) == (args.artifact is None):
        raise ConfigError("export takes a job id or --artifact DIR (one of the two)")
    if args.job is not None:
        return export_job(args.job, args.out, settings, args.include_samples)
    if not args.out:
        raise ConfigError("export --artifact needs --out FILE.zip")
    path = export_zip(args.artifact, args.out, include_samples=args.include_samples)
    print(json.dumps({"zip": str(path), "bytes": path.stat().st_size}))
    return 0


def cmd_compare(args: argparse.Namespace, settings: Settings) -> int:
    """``compare RUN RUN [RUN ...]``, a RUN being a job id or a run folder written by ``train
    --out``: one JSON object, each run's score with its interval and every other run against the
    best (``backend.significance.compare_runs``). Different evaluation rows: exit 2."""
    from backend.artifacts.load import read_manifest
    from backend.artifacts.predictions import read_predictions
    from backend.significance import compare_runs
    from backend.tasks import registry as tasks

    named, kinds = [], {}
    for run in args.runs:
        if run.isdigit():
            bench = job_bench(settings)
            named.append((f"job {run}", bench.eval_predictions(int(run))))
            kinds[f"job {run}"] = bench.get_job(int(run), log_tail=0)["task"]
            continue
        frame = read_predictions(run)
        if frame is None:
            raise ConfigError(f"{run}: neither a job id nor a run folder with eval_predictions.parquet")
        named.append((run, frame))
        kinds[run] = tasks.get(read_manifest(Path(run)).get("task")).key
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{name} ({kind})" for name, kind in kinds.items())
        raise ConfigError(f"runs of different tasks cannot be paired: {listed}")
    try:
        result = compare_runs(named, tasks.get(next(iter(kinds.values()), None)).scoring)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    print(json.dumps(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python app.py", description="Adaptation workbench. With no command, serves the web app."
    )
    parser.add_argument(
        "--db-url", help="job database URL (default: WORKBENCH_DB_URL or sqlite:///<data dir>/workbench.db)"
    )
    add_tracker_arguments(parser)
    add_runner_arguments(parser)
    # The same option after the command too; SUPPRESS keeps a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db-url", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    add_tracker_arguments(common, after_command=True)
    add_runner_arguments(common, after_command=True)
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
    compare = sub.add_parser(
        "compare",
        parents=[common],
        help="scores with 95%% intervals, and whether runs on the same rows really differ",
    )
    compare.add_argument("runs", nargs="+", metavar="RUN", help="a job id or a run folder (train --out)")
    add_job_commands(sub, common)
    add_sweep_command(sub, common)
    return parser


TRACKER_FLAGS = {
    "tensorboard": "also log every job to TensorBoard, in <data dir>/tensorboard/job-<id> (or set "
    "WORKBENCH_TENSORBOARD=1)",
    "tensorboard_dir": "as --tensorboard, in DIR/job-<id>",
    "mlflow": "also log every job to MLflow, in sqlite:///<data dir>/mlflow/mlflow.db (or set "
    "WORKBENCH_MLFLOW=1)",
    "mlflow_uri": "as --mlflow, to this tracking URI (sqlite:///FILE, http://HOST:PORT, ...)",
}


def add_tracker_arguments(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """The experiment-tracker switches. They act where jobs run: in the web app and in
    ``worker``, ``submit`` and ``sweep`` when these start a supervisor."""
    for dest, text in TRACKER_FLAGS.items():
        options: dict[str, Any] = {"dest": dest, "help": argparse.SUPPRESS if after_command else text}
        if after_command:
            options["default"] = argparse.SUPPRESS  # keeps a value given before the command
        if dest.endswith(("_dir", "_uri")):
            options["metavar"] = dest.rpartition("_")[2].upper()
        else:
            options["action"] = "store_true"
        parser.add_argument("--" + dest.replace("_", "-"), **options)


def with_tracker_flags(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with the trackers the flags switch on (a flag never switches one off)."""
    tensorboard = args.tensorboard_dir or ("on" if args.tensorboard else None)
    mlflow = args.mlflow_uri or ("on" if args.mlflow else None)
    if (tensorboard or mlflow) and args.command in ("train", "predict", "export"):
        print(f"note: --tensorboard/--mlflow log jobs; `{args.command}` runs no job", file=sys.stderr)
    return settings.with_trackers(tensorboard=tensorboard, mlflow=mlflow)


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "train": cmd_train,
    "predict": cmd_predict,
    "export": cmd_export,
    "compare": cmd_compare,
    **JOB_COMMANDS,
    "sweep": cmd_sweep,
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
