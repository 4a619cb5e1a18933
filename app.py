"""Entry point: ``python app.py`` serves the web app; ``python app.py COMMAND`` runs headless.

See ``python app.py --help``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from backend.settings import Settings, apply_environment

    settings = Settings.from_env()
    apply_environment(settings)  # before transformers/gradio are imported
    from backend.errors import WorkbenchError
    from service.cli import build_parser, run_command, with_tracker_flags
    from service.cli_runner import with_runner_flags
    from ui.server import add_server_arguments, run_app

    parser = build_parser()
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    if args.db_url:
        settings = settings.with_(db_url=args.db_url)
    try:
        settings = with_runner_flags(with_tracker_flags(settings, args), args)
        if args.command is None:
            return run_app(settings, args)
    except WorkbenchError as exc:  # e.g. a runner that cannot start: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run_command(args, settings)


if __name__ == "__main__":
    sys.exit(main())
