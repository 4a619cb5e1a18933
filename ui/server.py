"""Serve the web app: check the host/auth rule, start the job supervisor, launch Gradio.

``serve(settings, host, port, auth)`` is what ``python app.py`` runs;
``python -m ui.server --port N`` does the same for tests and benchmarks. Offline by
design: analytics off, no share link, nothing fetched from the internet.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import sys
import threading
from typing import Any

from backend.errors import ConfigError, WorkbenchError
from backend.settings import Settings, apply_environment

AUTH_ENV = "WORKBENCH_AUTH"
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}

log = logging.getLogger("ui.server")


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may well resolve to a public interface


def parse_auth(text: str | None) -> tuple[str, str] | None:
    """``"user:password"`` -> ("user", "password"); None/"" -> None."""
    if not text:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise ConfigError(f"--auth / {AUTH_ENV} must look like user:password (both non-empty)")
    return user, password


def check_exposure(host: str, auth: tuple[str, str] | None) -> None:
    """Refuse to serve beyond this machine without a password."""
    if not is_loopback(host) and auth is None:
        raise ConfigError(
            f"refusing to serve on {host} without a password: anyone who can reach it could "
            f"train, delete and download models. Add --auth user:password (or set {AUTH_ENV}=user:password), "
            "or use --host 127.0.0.1 and an SSH tunnel."
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
    from backend.api import Workbench
    from jobs.supervisor import Supervisor
    from ui.app import build

    supervisor = Supervisor(settings).start() if open_supervisor else None
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
    demo.queue(default_concurrency_limit=4)
    demo.launch(
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


def _warm_up(api: Any) -> None:
    """Import transformers and build the default tokenizer once, off the request path."""
    try:
        api.count_parameters("", "lora", {})
    except Exception:  # only a warm-up: the real call reports problems
        log.debug("warm-up failed", exc_info=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The web app's options, shared by ``python app.py`` and ``python -m ui.server``."""
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    parser.add_argument(
        "--auth",
        default=os.environ.get(AUTH_ENV),
        help=f"user:password, required to serve beyond this machine (or set {AUTH_ENV})",
    )
    parser.add_argument(
        "--no-supervisor", action="store_true", help="serve only; jobs run in a separate `app.py worker`"
    )


def run_app(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until Ctrl-C/SIGTERM with the CLI's exit codes (2 + one line for a user error)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # SIGTERM (e.g. from a test harness or systemd) should stop cleanly, like Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        serve(settings, args.host, args.port, parse_auth(args.auth), open_supervisor=not args.no_supervisor)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m ui.server [--host H] [--port N] [--auth user:password] [--no-supervisor]``."""
    parser = argparse.ArgumentParser(prog="python -m ui.server", description=__doc__.splitlines()[0])
    add_server_arguments(parser)
    return run_app(Settings.from_env(), parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
