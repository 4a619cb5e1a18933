"""The runner flags: where the jobs of this process run (``--runner``, ``--ray-address``).

They act where a supervisor starts: the web app, and ``worker``, ``submit`` and ``sweep``.
Given before or after the command; the environment (WORKBENCH_RUNNER, ...) is the default.
"""

from __future__ import annotations

import argparse

from backend.settings import RUNNERS, Settings

RUNNER_FLAGS = {
    "runner": f"where jobs run: {' or '.join(RUNNERS)} (default: WORKBENCH_RUNNER or local)",
    "ray_address": "the Ray cluster for --runner ray: its dashboard, e.g. http://HEAD:8265 "
    "(default: WORKBENCH_RAY_ADDRESS, else RAY_ADDRESS or a cluster on this machine)",
}


def add_runner_arguments(parser: argparse.ArgumentParser, *, after_command: bool = False) -> None:
    """``--runner`` and ``--ray-address``; after a command they keep a value given before it."""
    for dest, text in RUNNER_FLAGS.items():
        options: dict[str, object] = {"dest": dest, "help": argparse.SUPPRESS if after_command else text}
        options["default"] = argparse.SUPPRESS if after_command else None
        if dest == "runner":
            options["choices"] = RUNNERS
        else:
            options["metavar"] = "URL"
        parser.add_argument("--" + dest.replace("_", "-"), **options)  # type: ignore[arg-type]


def with_runner_flags(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with the runner the flags choose, checked (a ConfigError says what is wrong)."""
    changes: dict[str, object] = {}
    if getattr(args, "runner", None):
        changes["runner"] = args.runner
    if getattr(args, "ray_address", None):
        changes["ray_address"] = args.ray_address
        changes.setdefault("runner", "ray")  # an address alone means: use that cluster
    return settings.with_(**changes).check_runner()
