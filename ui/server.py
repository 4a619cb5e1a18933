"""Serve the web app: check the host/auth rule, start the job supervisor, launch Gradio.

``serve(settings, host, port, auth)`` is what ``python app.py`` runs;
``python -m ui.server --port N`` does the same for tests and benchmarks. Offline by
design: analytics off, no share link, nothing fetched from the internet.

The password comes from ``WORKBENCH_AUTH`` or ``--auth-file``: a ``--auth`` value is
readable by every user of the machine (``ps``), so it still works but earns a warning.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from backend.errors import ConfigError, WorkbenchError
from service.host import Settings, apply_environment, positive_int, start_supervisor
from ui.exposure import is_loopback

AUTH_ENV = "WORKBENCH_AUTH"  # jobs.runner.worker_environment keeps it from the workers
AUTH_ON_COMMAND_LINE = (
    "warning: --auth puts the password on the command line, where every user of this machine "
    f"can read it (ps, /proc). Set {AUTH_ENV}=user:password or use --auth-file FILE instead."
)

UPLOAD_MAX_AGE_S = 24 * 3600  # uploads are registered within seconds; older ones are leftovers

log = logging.getLogger("ui.server")


def parse_auth(text: str | None, source: str = f"--auth-file / {AUTH_ENV}") -> tuple[str, str] | None:
    """``"user:password"`` -> ("user", "password"); None/"" -> None."""
    if not text:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise ConfigError(f"{source} must look like user:password (both non-empty)")
    return user, password


def read_auth_file(path: str) -> str:
    """The first non-empty line of ``path`` (a trailing newline is no part of the password)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        mode = Path(path).stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--auth-file {path}: cannot read it ({exc})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        print(f"warning: --auth-file {path} is readable by other users; chmod 600 it", file=sys.stderr)
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def read_auth(
    auth: str | None, auth_file: str | None, environ: Mapping[str, str] = os.environ
) -> tuple[str, str] | None:
    """The login from ``--auth-file``, else ``--auth`` (with a warning), else ``WORKBENCH_AUTH``."""
    if auth and auth_file:
        raise ConfigError("give --auth-file or --auth, not both")
    if auth_file:
        return parse_auth(read_auth_file(auth_file), f"the first line of --auth-file {auth_file}")
    if auth:
        print(AUTH_ON_COMMAND_LINE, file=sys.stderr)
        return parse_auth(auth, "--auth")
    return parse_auth(environ.get(AUTH_ENV), AUTH_ENV)


def check_exposure(host: str, auth: tuple[str, str] | None) -> None:
    """Refuse to serve beyond this machine without a password."""
    if not is_loopback(host) and auth is None:
        raise ConfigError(
            f"refusing to serve on {host} without a password: anyone who can reach it could "
            f"train, delete and download models. Set {AUTH_ENV}=user:password or pass --auth-file FILE "
            "(a file holding user:password), or use --host 127.0.0.1 and an SSH tunnel."
        )


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 7860,
    auth: tuple[str, str] | None = None,
    open_supervisor: bool = True,
) -> None:
    """Run the app until Ctrl-C / SIGTERM.

    The supervisor runs in this process; on exit it stops claiming jobs, and running
    workers carry on (the next start adopts them).
    """
    check_exposure(host, auth)
    apply_environment(settings)  # before gradio/transformers are imported
    from service.api import Workbench
    from ui.app import build

    supervisor = start_supervisor(settings) if open_supervisor else None
    try:
        api = Workbench(settings)
        demo = build(api)
        _launch(demo, settings, host, port, auth)
        # After launch: the warm-up competes for the CPU, and the first page comes first.
        threading.Thread(target=_warm_up, args=(api,), name="warm-up", daemon=True).start()
        print(f"Adaptation workbench on http://{host}:{port}  (Ctrl-C stops it)", flush=True)
        demo.block_thread()
    finally:
        if supervisor is not None:
            supervisor.stop()


def _launch(demo: Any, settings: Settings, host: str, port: int, auth: tuple[str, str] | None) -> None:
    from ui.app import CSS

    exports = settings.data_dir / "exports"  # export zips are served from here, nothing else
    exports.mkdir(parents=True, exist_ok=True)
    sweep_stale_uploads(settings)
    demo.queue(default_concurrency_limit=4)
    demo.launch(
        # Gradio refuses a bigger upload while it streams in (HTTP 413), before it fills the
        # disk; register_dataset checks the same limit for files given any other way.
        max_file_size=settings.max_upload_bytes,
        server_name=host,
        server_port=port,
        auth=auth,
        share=False,
        show_error=False,
        prevent_thread_lock=True,
        quiet=True,
        inbrowser=False,
        css=CSS,
        allowed_paths=[str(exports)],
        footer_links=["api", "settings"],
    )


def sweep_stale_uploads(settings: Settings, max_age_s: float = UPLOAD_MAX_AGE_S) -> int:
    """Remove uploads older than ``max_age_s`` left by an earlier run (e.g. one that was
    killed); Gradio's own sweep (``delete_cache``) only knows this run's files. Only when
    the upload folder is the app's own, inside the data folder. Returns files removed."""
    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()).resolve()
    if not folder.is_relative_to(settings.data_dir.resolve()) or not folder.is_dir():
        return 0
    cutoff, removed = time.time() - max_age_s, 0
    for path in sorted(folder.rglob("*"), reverse=True):  # files before their folders
        with contextlib.suppress(OSError):  # gone meanwhile, or a folder still in use
            if path.is_symlink() or path.is_file():
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    return removed


def _warm_up(api: Any) -> None:
    """Import transformers and build the default tokenizer once, off the request path."""
    try:
        api.count_parameters("", next(m["key"] for m in api.list_methods() if m["default"]), {})
    except Exception:  # only a warm-up: the real call reports problems
        log.debug("warm-up failed", exc_info=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The web app's options, shared by ``python app.py`` and ``python -m ui.server``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    parser.add_argument(
        "--auth-file",
        metavar="FILE",
        help=f"a file holding user:password, required to serve beyond this machine (or set {AUTH_ENV})",
    )
    parser.add_argument(
        "--auth",
        metavar="USER:PASSWORD",
        help=f"discouraged: visible to every user in `ps`; use {AUTH_ENV} or --auth-file",
    )
    parser.add_argument(
        "--allow-local-models",
        action="store_true",
        help="let the web page and API name any server folder as base model (default: only the "
        "list, models_cache/ folders and hub ids)",
    )
    parser.add_argument(
        "--admin-details",
        action="store_true",
        help="show tracebacks, server paths and pids to callers from other machines too "
        "(default: only to callers on this machine)",
    )
    parser.add_argument(
        "--no-supervisor", action="store_true", help="serve only; jobs run in a separate `app.py worker`"
    )
    parser.add_argument(
        "--max-upload-mb",
        type=_positive("--max-upload-mb"),
        metavar="MB",
        help="largest dataset file accepted (default: WORKBENCH_MAX_UPLOAD_MB or 500)",
    )
    parser.add_argument(
        "--max-rows",
        type=_positive("--max-rows"),
        metavar="N",
        help="most rows a dataset may have (default: WORKBENCH_MAX_ROWS or 1000000)",
    )


def _positive(flag: str) -> Any:
    def parse(text: str) -> int:
        try:
            return positive_int(text, flag, 1)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def run_app(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until Ctrl-C/SIGTERM with the CLI's exit codes (2 + one line for a user error)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # SIGTERM (e.g. from a test harness or systemd) should stop cleanly, like Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    settings = settings.with_(
        allow_local_models=args.allow_local_models,
        admin_details=args.admin_details,
        max_upload_mb=args.max_upload_mb or settings.max_upload_mb,
        max_rows=args.max_rows or settings.max_rows,
    )
    try:
        auth = read_auth(args.auth, args.auth_file)
        serve(settings, args.host, args.port, auth, open_supervisor=not args.no_supervisor)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m ui.server [--host H] [--port N] [--auth-file FILE] [--no-supervisor] ...``."""
    parser = argparse.ArgumentParser(prog="python -m ui.server", description=__doc__.splitlines()[0])
    add_server_arguments(parser)
    return run_app(Settings.from_env(), parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
