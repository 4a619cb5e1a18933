"""Workers forked from a process that has imported the training stack once.

A worker started as ``python -m jobs.worker ID`` spends 4-5 s of CPU importing torch,
transformers, peft and scikit-learn before its job does anything (7 s with the adapters
library): on 2 cores that is the whole run of a small job, and a sweep pays it per trial. The
fork server (``python -m jobs.forkserver``) imports them once; each job's worker is then a
fork of it that runs ``jobs.worker.main`` with the job's own environment, log and niceness.

What a forked worker is, as the supervisor sees it, is what a started one was: its own
session (``killpg`` reaches it, Ctrl-C in the app's terminal does not), its log on stdout and
stderr, no stdin, the app's password not in its environment, and an exit code reported when
it ends (negative: killed by that signal). It outlives the app as before: the server stops
forking when its supervisor's process goes away, and its children run on.

The protocol is JSON lines: the runner writes ``{"job_id", "env", "log", "nice"}``, the server
answers ``{"started": job_id, "pid": pid}`` and, when a worker ends, ``{"exited": pid, "code": c}``.

Only CPU machines use it (``jobs.runner``): a process that touched CUDA must not fork, and a GPU
job's minutes dwarf its imports. ``WORKBENCH_FORK_WORKERS=0`` starts every worker as a process.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from backend.settings import PROJECT_ROOT

# What a worker imports before it trains (jobs.worker defers them so that its heartbeat runs
# first; here they are paid once).
PRELOAD = (
    "torch", "transformers", "peft", "sklearn.metrics", "pandas", "sqlalchemy", "backend.run", "jobs.worker",
)  # fmt: skip
READY_SECONDS = 120.0  # the first start waits for the imports (seconds on an idle machine)
ANSWER_SECONDS = 30.0
IDLE_SECONDS = 600.0  # a server nobody asked for a worker this long exits (it holds ~600 MB)
ENV_SWITCH = "WORKBENCH_FORK_WORKERS"


# ---------------------------------------------------------------- the server process


def serve() -> None:
    """Import the stack, then fork a worker per request until stdin closes or sits idle."""
    for name in PRELOAD:
        importlib.import_module(name)
    _say({"ready": os.getpid()})
    children: set[int] = set()
    pending = b""
    last_request = time.monotonic()
    while True:
        readable, _, _ = select.select([0], [], [], 0.2)
        if readable:
            chunk = os.read(0, 65536)
            if not chunk:
                break  # the supervisor's process is gone: fork no more (children run on)
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                children.add(_fork(json.loads(line)))
                last_request = time.monotonic()
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                _say({"exited": pid, "code": os.waitstatus_to_exitcode(status)})
        if not children and time.monotonic() - last_request > IDLE_SECONDS:
            break


def _say(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def _fork(request: dict[str, Any]) -> int:
    pid = os.fork()
    if pid == 0:
        _become_worker(request)  # never returns
    _say({"started": request["job_id"], "pid": pid})
    return pid


def _become_worker(request: dict[str, Any]) -> None:
    """In the child: a session of its own, the job's environment, its log, then the job."""
    code = 1
    try:
        os.setsid()
        os.nice(int(request.get("nice", 0)))
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(null)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(PROJECT_ROOT)
        from jobs.worker import main

        code = main([str(request["job_id"])])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            import atexit

            atexit._run_exitfuncs()  # what a process's normal exit runs (trackers' last writes)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------- the runner's side


class ForkServer:
    """The server process and what it has said: started workers and their exit codes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jobs.forkserver"],
            cwd=PROJECT_ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in the app's terminal is not meant for it
        )
        self.ready = threading.Event()
        self.exits: dict[int, int] = {}
        self.children: set[int] = set()
        self._started: dict[int, int] = {}  # job id -> pid, until start() takes it
        self._answer = threading.Condition()
        self._write = threading.Lock()
        threading.Thread(target=self._listen, name="forkserver", daemon=True).start()

    def alive(self) -> bool:
        return self.process.poll() is None

    def start(self, job_id: int, env: dict[str, str], log_path: Path, nice: int) -> int:
        """Fork a worker for ``job_id``; its pid. OSError if the server cannot."""
        deadline = time.monotonic() + READY_SECONDS
        while not self.ready.wait(0.2):
            if not self.alive() or time.monotonic() > deadline:
                raise OSError("the fork server did not start")
        request = {"job_id": job_id, "env": env, "log": str(log_path), "nice": nice}
        with self._write:
            assert self.process.stdin is not None
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        with self._answer:
            if not self._answer.wait_for(lambda: job_id in self._started or not self.alive(), ANSWER_SECONDS):
                raise OSError("the fork server did not answer")
            if job_id not in self._started:
                raise OSError("the fork server stopped")
            return self._started.pop(job_id)

    def exit_code(self, pid: int) -> int | None:
        """The exit code of worker ``pid`` once the server has reaped it, else None."""
        return self.exits.get(pid)

    def stop(self) -> None:
        """No more forks; the workers run on."""
        with contextlib.suppress(OSError, ValueError), self._write:
            assert self.process.stdin is not None
            self.process.stdin.close()

    def _listen(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            message = json.loads(raw)
            with self._answer:
                if "ready" in message:
                    self.ready.set()
                elif "started" in message:
                    self.children.add(message["pid"])
                    self._started[message["started"]] = message["pid"]
                elif "exited" in message:
                    self.children.discard(message["exited"])
                    self.exits[message["exited"]] = message["code"]
                self._answer.notify_all()
        with self._answer:
            self._answer.notify_all()  # the server is gone: nobody waits for it any longer


_server: ForkServer | None = None
_server_lock = threading.Lock()


def shared_server(env: dict[str, str]) -> ForkServer | None:
    """This process's fork server (started on first use, and again if it exited); None where
    workers are started as processes instead (switched off)."""
    global _server
    if os.environ.get(ENV_SWITCH, "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    with _server_lock:
        if _server is None or not _server.alive():
            _server = ForkServer(env)
        return _server


def known_exit(pid: int) -> int | None:
    """The exit code this process's fork server reported for ``pid``, if any."""
    return _server.exit_code(pid) if _server is not None else None


def forked_here(pid: int) -> bool:
    """True while ``pid`` is a worker of this process's fork server that it has not reaped."""
    return _server is not None and _server.alive() and pid in _server.children


if __name__ == "__main__":
    serve()
