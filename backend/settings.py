"""Where things live: one frozen settings object read from the environment (and CLI flags).

Everything the app writes goes under ``data_dir`` (default ``runs/``) and the model
cache under ``models_cache/``; both are git-ignored and configurable.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path

from backend.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Settings:
    """Paths and server options. Build with :meth:`from_env`, override with ``with_``."""

    data_dir: Path
    models_cache: Path
    db_url: str
    host: str = "127.0.0.1"
    port: int = 7860
    # Web app only (flags of `python app.py`); the CLI is a local user and is not limited.
    allow_local_models: bool = False  # --allow-local-models: API/UI may name server folders as models
    admin_details: bool = False  # --admin-details: remote callers see tracebacks, paths and pids
    # Limits on what a dataset may be (uploads, and files given to `submit --data`): a table of
    # this size is already read into memory whole, so the limits keep one request from
    # exhausting the server. WORKBENCH_MAX_UPLOAD_MB / WORKBENCH_MAX_ROWS, or the same flags.
    max_upload_mb: int = 500
    max_rows: int = 1_000_000
    # Experiment trackers (jobs.trackers), off unless switched on: every job the supervisor of
    # this process runs also logs its config and metrics there. WORKBENCH_TENSORBOARD /
    # WORKBENCH_MLFLOW ("1" = the default place, or a folder / tracking URI), or the flags
    # --tensorboard[-dir] / --mlflow[-uri]. Workers get them through jobs.runner.
    # The job list (/jobs, the Runs tab) is answered from memory for this long: every open
    # page polls it every 2 s, and 8 pages each running the query kept a training job's
    # 2 cores busy (bench/UI.md). Writes made through this app clear it at once; a worker's
    # progress shows within this time. 1 s in the app (from_env; WORKBENCH_JOBS_CACHE_SECONDS),
    # 0 (off) for a Settings built in code, where a script expects to read what it just saw.
    jobs_cache_seconds: float = 0.0
    tensorboard_dir: Path | None = None  # event files go to <tensorboard_dir>/job-<id>/
    mlflow_uri: str | None = None  # a tracking URI; switched on alone: default_mlflow_uri
    # Where jobs run (jobs.runner): "local" worker processes, or "ray", submitted through the
    # Ray Jobs API to the cluster at ray_address (None: RAY_ADDRESS or a cluster started on
    # this machine). WORKBENCH_RUNNER / WORKBENCH_RAY_ADDRESS / WORKBENCH_RAY_CPUS, or the
    # flags --runner / --ray-address. A Ray job asks for ray_cpus_per_job CPUs (or one GPU).
    runner: str = "local"
    ray_address: str | None = None
    ray_cpus_per_job: float = 1.0

    @classmethod
    def from_env(cls) -> Settings:
        """Read ``WORKBENCH_DATA_DIR``, ``WORKBENCH_MODELS_CACHE``, ``WORKBENCH_DB_URL``,
        ``WORKBENCH_MAX_UPLOAD_MB``, ``WORKBENCH_MAX_ROWS``, ``WORKBENCH_JOBS_CACHE_SECONDS``,
        ``WORKBENCH_TENSORBOARD``, ``WORKBENCH_MLFLOW``, ``WORKBENCH_RUNNER``,
        ``WORKBENCH_RAY_ADDRESS`` and ``WORKBENCH_RAY_CPUS``."""
        data_dir = Path(os.environ.get("WORKBENCH_DATA_DIR", PROJECT_ROOT / "runs")).resolve()
        models_cache = Path(os.environ.get("WORKBENCH_MODELS_CACHE", PROJECT_ROOT / "models_cache")).resolve()
        db_url = os.environ.get("WORKBENCH_DB_URL", f"sqlite:///{data_dir / 'workbench.db'}")
        settings = cls(
            data_dir=data_dir,
            models_cache=models_cache,
            db_url=db_url,
            max_upload_mb=_env_int("WORKBENCH_MAX_UPLOAD_MB", cls.max_upload_mb),
            max_rows=_env_int("WORKBENCH_MAX_ROWS", cls.max_rows),
            jobs_cache_seconds=float(os.environ.get("WORKBENCH_JOBS_CACHE_SECONDS", "1.0")),
            runner=os.environ.get("WORKBENCH_RUNNER", "local").strip().lower() or "local",
            ray_address=os.environ.get("WORKBENCH_RAY_ADDRESS") or None,
            ray_cpus_per_job=_env_float("WORKBENCH_RAY_CPUS", cls.ray_cpus_per_job),
        )
        return settings.with_trackers(
            tensorboard=os.environ.get(TENSORBOARD_ENV), mlflow=os.environ.get(MLFLOW_ENV)
        )

    def with_trackers(self, *, tensorboard: str | None = None, mlflow: str | None = None) -> Settings:
        """A copy with the trackers switched as ``tensorboard`` / ``mlflow`` say: None leaves one
        as it is, "0"/"off" switches it off, "1"/"on" on at its default place under the data
        folder, anything else is the folder (TensorBoard) or tracking URI (MLflow)."""
        changes: dict[str, object] = {}
        if tensorboard is not None:
            folder = _switch(tensorboard)
            if folder is True:
                folder = str(self.data_dir / "tensorboard")
            changes["tensorboard_dir"] = Path(folder).resolve() if folder else None
        if mlflow is not None:
            uri = _switch(mlflow)
            changes["mlflow_uri"] = self.default_mlflow_uri if uri is True else uri or None
        return self.with_(**changes)

    def tracker_environment(self) -> dict[str, str]:
        """The variables that give a worker process the same trackers as this one."""
        return {
            TENSORBOARD_ENV: str(self.tensorboard_dir) if self.tensorboard_dir else "off",
            MLFLOW_ENV: self.mlflow_uri or "off",
        }

    def check_runner(self) -> Settings:
        """Self, once the runner settings make sense; else a ConfigError saying what to fix.

        A cluster's workers write into the artifact root, so it must be writable here
        (each worker checks it again on its own node: jobs.worker)."""
        if self.runner not in RUNNERS:
            raise ConfigError(f"unknown runner {self.runner!r}: choose one of {', '.join(RUNNERS)}")
        if self.runner == "local":
            return self
        if self.ray_cpus_per_job <= 0:
            raise ConfigError(f"WORKBENCH_RAY_CPUS must be above 0, not {self.ray_cpus_per_job}")
        problem = artifact_root_problem(self.artifacts_dir)
        if problem is not None:
            raise ConfigError(problem)
        return self

    def with_(self, **changes: object) -> Settings:
        """A copy with some fields changed (e.g. from CLI flags)."""
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def datasets_dir(self) -> Path:
        return self.data_dir / "datasets"

    @property
    def feature_cache_dir(self) -> Path:
        return self.data_dir / "cache" / "features"

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def default_mlflow_uri(self) -> str:
        # SQLite, not MLflow's ./mlruns folder store: MLflow 3.x refuses the folder store
        # unless MLFLOW_ALLOW_FILE_STORE=true (it is in maintenance mode).
        return f"sqlite:///{self.data_dir / 'mlflow' / 'mlflow.db'}"


TENSORBOARD_ENV, MLFLOW_ENV = "WORKBENCH_TENSORBOARD", "WORKBENCH_MLFLOW"
_ON, _OFF = ("1", "on", "true", "yes"), ("", "0", "off", "false", "no")


def _switch(text: str) -> str | bool:
    """False (off), True (on, default place) or the folder/URI ``text`` names."""
    word = text.strip()
    if word.lower() in _OFF:
        return False
    return True if word.lower() in _ON else word


RUNNERS = ("local", "ray")


HOST_ENV = "WORKBENCH_HOST"


def host_name() -> str:
    """This machine's name in the job database (``Job.worker_host``, the supervisors' rows): the
    hostname, unless ``WORKBENCH_HOST`` gives another. Supervisors of one host share its job
    limit; two that share a hostname but should keep limits of their own (containers, a test of
    two supervisors) take different names. Workers inherit it from their supervisor."""
    import socket

    return os.environ.get(HOST_ENV) or socket.gethostname()


def artifact_root_problem(root: Path) -> str | None:
    """None if this machine can write into ``root``; else what is wrong, for the user.

    On a cluster every node must mount the same shared artifact root at the same path."""
    import socket
    import uuid

    probe = root / f".write-check-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        return (
            f"{socket.gethostname()} cannot write the artifact root {root} ({exc.strerror or exc}): "
            "every node must mount the shared artifact root at this path, writable "
            "(docs/jobs.md: Running on a cluster)"
        )
    return None


def _env_float(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, not {text!r}") from exc


def _env_int(name: str, default: int) -> int:
    return positive_int(os.environ.get(name), name, default)


def positive_int(text: str | None, source: str, default: int) -> int:
    """``text`` as a whole number of at least 1 (None or "" -> ``default``); else a ConfigError
    naming ``source`` (the variable or flag it came from)."""
    if text is None or not text.strip():
        return default
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{source} must be a whole number of at least 1, not {text!r}")
    return value


def apply_environment(settings: Settings) -> None:
    """Point every library's cache at project folders and switch telemetry off.

    Called once at start-up, before transformers/gradio are imported, because
    those libraries read these variables at import time.
    """
    settings.models_cache.mkdir(parents=True, exist_ok=True)
    cache = settings.data_dir / "cache"
    defaults = {
        "HF_HOME": str(settings.models_cache),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
        "GRADIO_TEMP_DIR": str(cache / "gradio"),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "MLFLOW_DISABLE_TELEMETRY": "true",  # MLflow 3 reports usage by default (jobs.trackers)
        "TOKENIZERS_PARALLELISM": "false",
        "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    # bitsandbytes warns at import, on CPUs with AVX512-BF16, that it cannot fetch an optional
    # kernel from the hub; we never use that kernel (4-bit layers run with the bf16 path off,
    # see backend.catalogue), so the line is only noise in every job's log.
    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)
