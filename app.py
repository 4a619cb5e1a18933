"""Entry point: ``python app.py`` serves the web app; ``python app.py COMMAND`` runs headless.

See ``python app.py --help``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Any

from backend.settings import Settings


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the web app (used when no command is given)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    parser.add_argument(
        "--auth",
        default=os.environ.get("WORKBENCH_AUTH"),
        help="user:password, required to serve beyond this machine (or set WORKBENCH_AUTH)",
    )
    parser.add_argument(
        "--no-supervisor", action="store_true", help="serve only; jobs run in a separate `app.py worker`"
    )


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the app like Ctrl-C: the supervisor shuts down cleanly


def serve(settings: Settings, args: argparse.Namespace) -> int:
    """Serve the Gradio app with the job supervisor running in this process."""
    import logging

    from backend.errors import WorkbenchError
    from ui.server import parse_auth, serve

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _stop)
    try:
        serve(settings, args.host, args.port, parse_auth(args.auth), open_supervisor=not args.no_supervisor)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    from backend.settings import apply_environment

    settings = Settings.from_env()
    apply_environment(settings)  # before transformers/gradio are imported
    from backend.cli import build_parser, run_command

    parser = build_parser()
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    if args.db_url:
        settings = settings.with_(db_url=args.db_url)
    if args.command is None:
        return serve(settings, args)
    return run_command(args, settings)


if __name__ == "__main__":
    sys.exit(main())
