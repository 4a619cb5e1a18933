"""UI figures: the app's cold start to first page, and /jobs latency while a job trains.

    .venv/bin/python bench/ui.py [--calls 50] [--rows 3000] [--sessions 8]

Starts ``python -m ui.server`` on a free port with a fresh data folder (cold start:
process start -> first HTTP 200 of "/"), queues a LoRA job of about a minute through
the API, and once it is training opens ``--sessions`` polling pages (each an open Runs
tab: /jobs and /job every 2 s, in the browser's protocol) and calls the /jobs endpoint
``--calls`` times as a page, then ``--calls`` times with gradio_client, one after another.
Three fresh servers: one page and the job-list cache on;
``--sessions`` pages with the cache off; the same with it on. Prints the figures and writes
bench/UI.md. Targets: /jobs p95 under 300 ms, cold start under 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
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
import uuid
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
PAGE_SECTION = "<!-- page CPU: bench/ui_page.py -->"


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


class Page:
    """One open browser page, speaking the page's own protocol (one session, join the queue,
    read the session's event stream) so that a page costs the server what a browser tab costs,
    and the bench's clients stay light: gradio_client's threads cost ~0.09 CPU-s per call here,
    and 8 of them on this machine's 2 cores would measure the clients, not the server."""

    def __init__(self, url: str) -> None:
        import httpx

        self.http = httpx.Client(base_url=url.rstrip("/") + "/gradio_api", timeout=60)
        config = httpx.get(url.rstrip("/") + "/config", timeout=60).json()
        self.ids = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
        self.session = uuid.uuid4().hex[:11]

    def call(self, api_name: str, *data: Any) -> Any:
        body = {"data": list(data), "event_data": None, "fn_index": self.ids[api_name], "trigger_id": None,
                "session_hash": self.session}  # fmt: skip
        event = self.http.post("/queue/join", json=body).json()["event_id"]
        with self.http.stream("GET", "/queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                message = json.loads(line[5:]) if line.startswith("data:") else {}
                if message.get("msg") == "process_completed" and message.get("event_id") == event:
                    if not message.get("success", True):
                        raise RuntimeError(f"{api_name} failed: {message}")
                    return message["output"]["data"]
        raise RuntimeError(f"{api_name}: the event stream closed before the answer")


def poll(url: str, job_id: int, stop_event: threading.Event) -> None:
    """One open page: the Runs tab's 2-second refresh (the job list and the shown job)."""
    page = Page(url)
    while not stop_event.is_set():
        began = time.monotonic()
        page.call("jobs")
        page.call("job", job_id, 60)
        stop_event.wait(max(0.0, 2.0 - (time.monotonic() - began)))


def time_calls(call: Any, calls: int) -> list[float]:
    latencies = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        latencies.append(1000 * (time.perf_counter() - began))
    return latencies


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
        page = Page(url)
        pollers = [threading.Thread(target=poll, args=(url, job["id"], stop_event)) for _ in range(sessions)]
        for poller in pollers:
            poller.start()
        time.sleep(3 if sessions else 0)  # every page has polled once
        server_cpu, began = cpu_seconds(process.pid), time.monotonic()
        latencies = time_calls(lambda: page.call("jobs"), args.calls)
        client_latencies = time_calls(lambda: client.predict(api_name="/jobs"), args.calls)
        server_share = (cpu_seconds(process.pid) - server_cpu) / (time.monotonic() - began)
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
        "client_latencies": client_latencies,
        "server_share": server_share,
        "running": running,
        "sessions": sessions,
        "cache": cache_seconds,
    }


def row(m: dict[str, Any]) -> str:
    lat = m["latencies"]
    cache = f"{m['cache']:g} s" if m["cache"] else "off"
    state = "yes" if m["running"] else "no"
    p95 = percentile(lat, 95)
    by_client = m["client_latencies"]
    return (
        f"| {m['sessions']} | {cache} | {statistics.median(lat):.0f} ms | {p95:.0f} ms "
        f"({_verdict(p95 < 300)}) | {max(lat):.0f} ms | {statistics.median(by_client):.0f} ms | "
        f"{percentile(by_client, 95):.0f} ms | {m['server_share']:.2f} | {state} |"
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

`/jobs` latency while a LoRA job trains ({args.rows} rows, max length 64, one epoch, on the same
{os.cpu_count()} cores as the server): {args.calls} sequential calls as a page makes them (the
browser's protocol: join the queue, read the session's event stream), then {args.calls} through
gradio_client (*client*) (the call a polling script makes; its own threads add their CPU time on this
machine). *pages*: other open pages, each polling `/jobs` and `/job` of the training job (with
60 log lines) every 2 s, as an open Runs tab does. *cache*: how long the app answers the job
list from memory (`WORKBENCH_JOBS_CACHE_SECONDS`; writes through the app clear it). *server
CPU*: the server process's CPU seconds per second during the timed calls. Each row is a fresh
server; target p95 < 300 ms.

| pages | cache | page p50 | page p95 | max | client p50 | client p95 | server CPU | still training |
|---:|---|---:|---:|---:|---:|---:|---:|---|
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
    # bench/ui_page.py's section (an open page's CPU) stays below this script's part.
    old = args.out.read_text() if args.out.exists() else ""
    page = old[old.index(PAGE_SECTION) :] if PAGE_SECTION in old else ""
    args.out.write_text(text + ("\n" + page if page else ""))
    print(text)


if __name__ == "__main__":
    main()
