"""What a caller from beyond this machine may see: no tracebacks, server paths or pids.

Anyone who can reach the port can call every endpoint, so the job, dataset and compare
dicts are redacted for callers that are not on loopback (unless the person who started
the app asked for ``--admin-details``). People on the machine keep everything: they can
read the files anyway, and the details are what they debug with.

Imports nothing heavy: ``ui.server`` uses :func:`is_loopback` before gradio is imported.
"""

from __future__ import annotations

import ipaddress
import re
from pathlib import PurePath
from typing import Any

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
# A reverse proxy on this machine makes every caller look local; it says so in these headers.
FORWARDING_HEADERS = {"x-forwarded-for", "forwarded", "x-real-ip"}
# Keys whose values only make sense on the server (or help an attacker), dropped at any depth.
HIDDEN_KEYS = frozenset(
    {
        "error_detail",
        "worker_pid",
        "worker_host",
        "worker_started",
        "log_path",
        "artifact_dir",
        "base_model_path",
    }
)
# Keys that always hold a server file path (absolute or not): the file name is what a person needs.
FILE_KEYS = frozenset({"data", "eval_data", "stored_file"})
# An absolute path ("/srv/x/y.csv", "~/x") not inside a word, URL or ratio like "3/4".
_SEGMENT = r"[^\s'\"/,;:()\[\]{}<>|]+"
ABSOLUTE_PATH = re.compile(rf"(?<![\w.~:/-])~?/{_SEGMENT}(?:/{_SEGMENT})*/?")
PID = re.compile(r"\bpid[ =:]+\d+(?: on [\w.-]+)?")
LOG_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} ")
TRACEBACK_HIDDEN = "(traceback hidden: it is shown only to callers on the server's machine)"


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may well resolve to a public interface


def is_local_request(request: Any) -> bool:
    """True when a ``gr.Request`` came straight from this machine (not through a proxy).

    Fails closed: a request without a client address counts as remote.
    """
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    if not host or not is_loopback(str(host)):
        return False
    headers = getattr(request, "headers", None)
    # .keys(): Starlette's Headers and gradio's dict-like Obj both have it; Obj iterates pairs.
    names = {str(k).lower() for k in headers.keys()} if headers is not None else set()  # noqa: SIM118
    return not names & FORWARDING_HEADERS


def scrub_text(text: str) -> str:
    """``text`` with absolute paths cut to their file name and pids hidden."""
    text = ABSOLUTE_PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    return PID.sub("pid (hidden)", text)


def scrub_log(lines: list[str]) -> list[str]:
    """Log lines without traceback frames (one marker line instead), then :func:`scrub_text`.

    A tail may start inside a traceback, so an indented ``File "..."`` line opens one too.
    """
    out: list[str] = []
    in_traceback = False
    for line in lines:
        body = LOG_STAMP.sub("", line, count=1)
        opens = body.startswith("Traceback (most recent call last)") or body.lstrip().startswith('File "')
        if opens and not in_traceback:
            out.append(TRACEBACK_HIDDEN)
        if opens or (in_traceback and (not body.strip() or body[:1].isspace())):
            in_traceback = True
            continue
        in_traceback = False
        out.append(scrub_text(line))
    return out


def redact(value: Any) -> Any:
    """A copy of an API result fit for a remote caller (see the module docstring)."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if key in HIDDEN_KEYS:
                continue
            if key in FILE_KEYS and isinstance(item, str):
                out[key] = PurePath(item).name
            elif key == "log" and isinstance(item, list):
                out[key] = scrub_log([str(line) for line in item])
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value
