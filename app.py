"""Entry point: ``python app.py`` serves the web app; ``python app.py COMMAND`` runs headless.

See ``python app.py --help``.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from backend.settings import Settings, apply_environment

    settings = Settings.from_env()
    apply_environment(settings)  # before transformers/gradio are imported
    from backend.cli import build_parser, run_command

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        # The web UI arrives with its own issue; until then show what the CLI can do.
        parser.print_help()
        return 0
    return run_command(args, settings)


if __name__ == "__main__":
    sys.exit(main())
