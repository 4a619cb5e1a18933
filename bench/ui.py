"""UI figures: the app's cold start to first page, and /jobs latency while a job trains.

    .venv/bin/python bench/ui.py [--calls 50] [--rows 3000] [--sessions 8]

Starts ``python -m ui.server`` on a free port with a fresh data folder (cold start:
process start -> first HTTP 200 of "/"), queues a LoRA job of about a minute through
the API, and once it is training opens ``--sessions`` polling clients (each an open Runs
tab: /jobs and /job every 2 s) and calls the /jobs endpoint ``--calls`` times with
gradio_client, one after another. Three fresh servers: one page and the job-list cache on;
``--sessions`` pages with the cache off; the same with it on. Prints the figures and writes
bench/UI.md. Targets: /jobs p95 under 300 ms, cold start under 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.settings import Settings  # noqa: E402
from service.api import Workbench  # noqa: E402

WORDS = {
    "pos": ["great", "wonderful", "moving", "superb", "fun"],
    "neg": ["awful", "dull", "weak", "tedious", "bad"],
}
NOUNS = ["movie", "film", "plot", "cast", "ending", "script"]


def write_rows(path: Path, n: int) -> Path:
    rng = random.Random(0)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["text", "label"])
        for i in range(n):
            label = "pos" if i % 2 else "neg"
            words = " and ".join(rng.choices(WORDS[label], k=3))
            out.writerow([f"the {rng.choice(NOUNS)} was {words}, said a viewer on day {i}", label])
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(data: Path, port: int, cache_seconds: float) -> tuple[subprocess.Popen[bytes], float]:
    """The server process and its cold start in seconds (process start -> first 200 of "/")."""
    env = {**os.environ, "WORKBENCH_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
           "WORKBENCH_JOBS_CACHE_SECONDS": str(cache_seconds)}  # fmt: skip
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ui.server", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=(data.parent / "server.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    while True:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}; see {data.parent / 'server.log'}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                if r.status == 200:
                    return process, time.perf_counter() - began
        except OSError:
            time.sleep(0.05)


def wait_training(client: Any, job_id: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.predict(job_id=job_id, log_tail=0, api_name="/job")
        if job["status"] == "running" and (job["step"] or 0) >= 1:
            return
        if job["status"] not in ("queued", "running"):
            raise SystemExit(f"job {job_id} ended early: {job['status']} {job['error']}")
        time.sleep(0.5)
    raise SystemExit("the job did not start training in time")


def time_jobs(client: Any, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        began = time.perf_counter()
        client.predict(api_name="/jobs")
        latencies.append(1000 * (time.perf_counter() - began))
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def stop(process: subprocess.Popen[bytes], data: Path) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    bench = Workbench(
        Settings(
            data_dir=data,
            models_cache=Settings.from_env().models_cache,
            db_url=f"sqlite:///{data / 'workbench.db'}",
        )
    )
    for job in bench.list_jobs():
        pid = bench.get_job(job["id"], log_tail=0)["worker_pid"]
        if job["status"] == "running" and pid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def poll(url: str, job_id: int, stop_event: threading.Event) -> None:
    """One open page: the Runs tab's 2-second refresh (the job list and the shown job)."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    while not stop_event.is_set():
        began = time.monotonic()
        client.predict(api_name="/jobs")
        client.predict(job_id=job_id, log_tail=60, api_name="/job")
        stop_event.wait(max(0.0, 2.0 - (time.monotonic() - began)))


def measure(args: argparse.Namespace, sessions: int, cache_seconds: float) -> dict[str, Any]:
    """Start a fresh server, train a LoRA job, open ``sessions`` polling pages, then time
    ``--calls`` sequential /jobs calls."""
    from gradio_client import Client, handle_file

    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    data = work / "data"
    process, cold = start(data, port := free_port(), cache_seconds)
    url = f"http://127.0.0.1:{port}/"
    stop_event = threading.Event()
    pollers: list[threading.Thread] = []
    try:
        client = Client(url, verbose=False)
        dataset = client.predict(
            file=handle_file(str(write_rows(work / "bench.csv", args.rows))), api_name="/upload_dataset"
        )
        job = client.predict(
            dataset_id=dataset["id"],
            method="lora",
            epochs=1,
            max_length=64,
            batch_size=16,
            api_name="/launch",
        )
        wait_training(client, job["id"])
        pollers = [threading.Thread(target=poll, args=(url, job["id"], stop_event)) for _ in range(sessions)]
        for poller in pollers:
            poller.start()
        time.sleep(3 if sessions else 0)  # every page has polled once
        latencies = time_jobs(client, args.calls)
        running = client.predict(job_id=job["id"], log_tail=0, api_name="/job")["status"] == "running"
    finally:
        stop_event.set()
        for poller in pollers:
            poller.join(timeout=30)
        stop(process, data)
    print(f"{sessions} pages, cache {cache_seconds:g} s: p95 {percentile(latencies, 95):.0f} ms", flush=True)
    return {
        "cold": cold,
        "latencies": latencies,
        "running": running,
        "sessions": sessions,
        "cache": cache_seconds,
    }


def row(m: dict[str, Any]) -> str:
    lat = m["latencies"]
    cache = f"{m['cache']:g} s" if m["cache"] else "off"
    state = "yes" if m["running"] else "no"
    p95 = percentile(lat, 95)
    return (
        f"| {m['sessions']} | {cache} | {statistics.median(lat):.0f} ms | {p95:.0f} ms "
        f"({_verdict(p95 < 300)}) | {max(lat):.0f} ms | {state} |"
    )


def report(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    import gradio

    command = " ".join(["python", "bench/ui.py", *sys.argv[1:]])
    cold = runs[0]["cold"]
    rows = "\n".join(row(m) for m in runs)
    return f"""# UI figures (`bench/ui.py`)

Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPU cores,
Python {platform.python_version()}, gradio {gradio.__version__}: `{command}`.

Cold start (process start → first HTTP 200 of `/`): **{cold:.1f} s** (target < 10 s: {_verdict(cold < 10)}).

`/jobs` latency: {args.calls} sequential gradio_client calls (the call a polling script makes)
while a LoRA job trains ({args.rows} rows, max length 64, one epoch, on the same {os.cpu_count()}
cores as the server), with *pages* other clients each polling `/jobs` and `/job` of the training
job every 2 s, as an open Runs tab does. *cache*: how long the app answers the job list from
memory (`WORKBENCH_JOBS_CACHE_SECONDS`; writes through the app clear it). Each row is a fresh
server; target p95 < 300 ms.

| pages | cache | p50 | p95 | max | job still training after the last call |
|---:|---|---:|---:|---:|---|
{rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rows", type=int, default=3000, help="training rows (~1 minute of LoRA on 2 cores)")
    parser.add_argument("--sessions", type=int, default=8, help="polling pages besides the timed client")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "UI.md")
    args = parser.parse_args()
    runs = [measure(args, 0, 1.0), measure(args, args.sessions, 0.0), measure(args, args.sessions, 1.0)]
    text = report(runs, args)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
