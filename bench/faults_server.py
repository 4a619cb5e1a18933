"""The server cases of bench/faults.py, against a real ``python -m ui.server`` over HTTP:
50 parallel submissions while a job trains, 4 browser sessions polling while it trains, and
hostile uploads.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from bench.faults_jobs import Result, result
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import wait_for
from tests.ui.chromium import BROWSER_ARGS, CHROMIUM, nav
from tests.ui.conftest import Server, http_ok

UPLOAD_LIMIT_MB = 500  # the app's default, which the server below runs with


def client(server: Server) -> Any:
    from gradio_client import Client

    return Client(server.url, verbose=False)


def datasets(api: Any) -> list[int]:
    return sorted(d["id"] for d in api.predict(api_name="/datasets"))


def start_training(api: Any, root: Path) -> tuple[int, int]:
    """Upload a dataset and launch a LoRA run that trains for minutes; returns (dataset, job)."""
    from gradio_client import handle_file

    data = write_csv(root / "train.csv", sentiment_rows(600, seed=4))
    dataset = api.predict(file=handle_file(str(data)), api_name="/upload_dataset")["id"]
    # A typed learning rate: no search, so the job is counting training steps from the start.
    job = api.predict(
        dataset_id=dataset, method="lora", epochs=30, lr=0.002, max_length=16, api_name="/launch"
    )["id"]
    wait_for(lambda: job_status(api, job) == "running", 300, f"job {job} to run")
    return dataset, job


def job_status(api: Any, job_id: int) -> str:
    return str(api.predict(job_id=job_id, log_tail=0, api_name="/job")["status"])


# ---------------------------------------------------------------- 50 parallel submissions


def parallel_submissions(server: Server, api: Any, dataset: int, count: int) -> Result:
    """``count`` /launch calls at once from as many threads, while a job trains: every one must
    be answered with its own new job, recorded once, with the settings it was sent."""
    bench = server.workbench()
    before = {j["id"] for j in bench.list_jobs()}

    # One client per caller, connected before the clock starts: a client's start-up fetches the
    # app's whole API description, which is not what a submission costs.
    callers = [client(server) for _ in range(count)]

    def launch(i: int) -> tuple[int | None, str, float]:
        started = time.perf_counter()
        try:
            answer = callers[i].predict(
                dataset_id=dataset, method="lora", epochs=1, batch_size=8 + i, api_name="/launch"
            )
            return int(answer["id"]), "", time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - a failure is a figure here
            return None, f"{type(exc).__name__}: {exc}"[:160], time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(launch, range(count)))
    wall = time.perf_counter() - started
    ids = [a[0] for a in answers if a[0] is not None]
    new = {j["id"]: j for j in bench.list_jobs() if j["id"] not in before}
    configs = {i: bench.get_job(i, log_tail=0)["config"] for i in new}
    # Each answer's job carries the batch size its request sent: no request lost or crossed.
    sent = {int(a[0]): 8 + i for i, a in enumerate(answers) if a[0] is not None}
    matched = sum(1 for i, size in sent.items() if configs.get(i, {}).get("batch_size") == size)
    for job_id in new:  # they were only submissions: nothing needs to train
        bench.cancel(job_id)
    errors = sorted({a[1] for a in answers if a[1]})
    latencies = sorted(a[2] for a in answers)
    detail = (
        f"{len(ids)} answered with a job id, {len(set(ids))} distinct; {len(new)} new rows in the "
        f"database; {matched} with exactly the settings their request sent. All {count} answered "
        f"within {wall:.1f} s (median {statistics.median(latencies):.1f} s each, Gradio's queue "
        "runs them one at a time)."
    )
    if errors:
        detail += f" Errors: {errors[:3]}"
    ok = matched if len(new) == count and len(set(ids)) == len(ids) else min(matched, len(new))
    return result(f"{count} parallel submissions while a job trains", count, ok, detail)


# ---------------------------------------------------------------- browser sessions polling


def poll_jobs(server: Server, job: int, pollers: int, seconds: float) -> tuple[list[float], list[str]]:
    """``pollers`` API clients calling /jobs once a second each for ``seconds``."""
    latencies: list[float] = []
    errors: list[str] = []
    stop = threading.Event()
    clients = [client(server) for _ in range(pollers)]

    def poll(api: Any) -> None:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                rows = api.predict(api_name="/jobs")
                assert any(r["id"] == job for r in rows), "the training job is missing from /jobs"
                latencies.append(time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - a failure is a figure here
                errors.append(f"{type(exc).__name__}: {exc}"[:160])
            stop.wait(max(0.0, 1.0 - (time.perf_counter() - started)))

    threads = [threading.Thread(target=poll, args=(api,), daemon=True) for api in clients]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return latencies, errors


def quantiles(latencies: list[float]) -> str:
    if len(latencies) < 2:
        return "too few answers"
    p95 = statistics.quantiles(latencies, n=20)[18]
    return (
        f"p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms"
    )


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def polling(server: Server, job: int, sessions: int, seconds: float) -> Result:
    """While a job trains: first ``sessions`` API clients polling /jobs once a second; then the
    same with ``sessions`` headless browser pages open on the Runs tab (each refreshes every 2 s
    by itself). The browsers run on this same 2-core machine, as real users' browsers would not,
    so the CPU they take is reported beside the latency."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        return result("browser sessions polling", 0, 0, f"not measured: {CHROMIUM} missing")
    bench = server.workbench()
    step = bench.get_job(job, log_tail=0)["step"] or 0
    alone, alone_errors = poll_jobs(server, job, sessions, seconds / 2)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        for _ in range(sessions):
            page = browser.new_context().new_page()
            page.goto(server.url)
            nav(page, "Runs").click()
        chromium = [c for c in psutil.Process().children(recursive=True) if "chrom" in c.name()]
        server_proc = psutil.Process(server.process.pid)
        before = cpu_seconds(chromium), cpu_seconds([server_proc])
        shared, shared_errors = poll_jobs(server, job, sessions, seconds)
        used = cpu_seconds(chromium) - before[0], cpu_seconds([server_proc]) - before[1]
        browser.close()
    trained = (bench.get_job(job, log_tail=0)["step"] or 0) - step
    errors = alone_errors + shared_errors
    detail = (
        f"{sessions} API clients alone, {seconds / 2:.0f} s: {len(alone)} /jobs calls, {quantiles(alone)}. "
        f"With {sessions} browser pages on the Runs tab as well, {seconds:.0f} s: {len(shared)} calls, "
        f"{quantiles(shared)}; meanwhile chromium used {used[0]:.0f} CPU-s and the app server {used[1]:.0f} "
        f"CPU-s of the machine's {(os.cpu_count() or 1) * seconds:.0f}. {len(errors)} calls failed"
        + (f" ({errors[:2]})" if errors else "")
        + f"; the job trained {trained} steps meanwhile."
    )
    latencies = alone + shared
    case = f"{sessions} browser sessions polling /jobs while a job trains"
    return result(case, len(latencies) + len(errors), len(latencies), detail)


# ---------------------------------------------------------------- hostile uploads


def big_file(path: Path, megabytes: int, *, one_field: bool) -> Path:
    """A CSV of about ``megabytes`` MB: many rows, or one row whose text is the whole file."""
    chunk = b"word " * (1 << 18)  # 1.25 MiB
    with path.open("wb") as fh:
        fh.write(b"text,label\n")
        if one_field:
            fh.write(b'"')
        written = 0
        while written < megabytes << 20:
            fh.write(chunk if one_field else b"a row of text,pos\n" * 70_000)
            written += len(chunk) if one_field else 18 * 70_000
        fh.write(b'",pos\nshort,neg\n' if one_field else b"short,neg\n")
    return path


def hostile_uploads(server: Server, api: Any, root: Path) -> Result:
    """Each upload must be refused with a message naming the problem, store nothing, and leave
    the server answering; the server's memory is watched while it reads."""
    from gradio_client import handle_file

    nested = root / "nested.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    nested.write_text(f'{{"text": {deep}, "label": "a"}}\n{{"text": "b", "label": "b"}}\n')
    secret = root / "secret.csv"
    secret.write_text("text,label\nthe server's own table,a\nmore,b\n")
    cases: list[tuple[str, Any, str]] = [
        ("a server path as a string", str(secret), "server paths are not accepted"),
        ("a server path as {'path': ...}", {"path": str(secret)}, "server paths are not accepted"),
        ("a relative path with ..", "../../etc/hostname", "server paths are not accepted"),
        ("a deeply nested JSON line", handle_file(str(nested)), "nested too deeply"),
        (
            "a 400 MB field (under the upload limit)",
            handle_file(str(big_file(root / "field-400mb.csv", 400, one_field=True))),
            "the most one cell may hold is 1,000,000 characters",
        ),
    ]
    process = psutil.Process(server.process.pid)
    ok, notes = 0, []
    for label, given, expected in cases:
        before = datasets(api)
        started = time.perf_counter()
        try:
            api.predict(file=given, api_name="/upload_dataset")
            message = "ACCEPTED"
        except Exception as exc:  # noqa: BLE001 - the refusal is what is measured
            message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        seconds = time.perf_counter() - started
        # 413: Gradio refuses a file over the upload limit while it streams in ("File size
        # exceeded maximum allowed size"); the client reports the status.
        survived = expected in message and datasets(api) == before and http_ok(server.url)
        ok += survived
        rss = process.memory_info().rss / 2**20
        notes.append(f"{label}: {message!r} in {seconds:.1f} s (server RSS now {rss:.0f} MB)")
    # Over the upload limit: gradio_client refuses these itself, so they go to the server's
    # upload route as raw HTTP, as any program could send them; Gradio must stop reading at
    # the limit and keep nothing.
    for label, path in (
        ("a 1 GB file", big_file(root / "file-1gb.csv", 1024, one_field=False)),
        ("a 2 GB field", big_file(root / "field-2gb.csv", 2048, one_field=True)),
    ):
        before = datasets(api)
        started = time.perf_counter()
        status, message = raw_upload(server, path)
        seconds = time.perf_counter() - started
        kept = uploads_named(path.name)
        survived = status == 413 and not kept and datasets(api) == before and http_ok(server.url)
        ok += survived
        rss = process.memory_info().rss / 2**20
        notes.append(
            f"{label} (raw HTTP upload): HTTP {status} {message!r} in {seconds:.1f} s, "
            f"{len(kept)} copies left in the upload folder (server RSS now {rss:.0f} MB)"
        )
        path.unlink()
    for path in root.glob("*b.csv"):
        path.unlink()
    peak = peak_rss_mb(server.process.pid)
    detail = "; ".join(notes) + f". Server peak RSS over the run: {peak:.0f} MB."
    return result("hostile uploads", len(cases) + 2, ok, detail)


def raw_upload(server: Server, path: Path) -> tuple[int, str]:
    """POST ``path`` to Gradio's upload route as a streamed multipart body; (status, message)."""
    import httpx

    try:
        with path.open("rb") as fh:
            response = httpx.post(
                f"{server.url}gradio_api/upload", files={"files": (path.name, fh)}, timeout=600
            )
    except httpx.HTTPError as exc:  # the server may close the connection mid-body
        return 0, f"{type(exc).__name__}: {exc}"[:160]
    return response.status_code, response.text[:160]


def uploads_named(name: str) -> list[Path]:
    """Files called ``name`` in Gradio's upload folder (the server shares this process's)."""
    from gradio.utils import get_upload_folder

    return [p for p in Path(get_upload_folder()).rglob(name) if p.is_file()]


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
