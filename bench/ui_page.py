"""What an open page costs the browser: headless Chromium's CPU over a minute, on every tab.

    .venv/bin/python bench/ui_page.py [--seconds 60] [--rows 6000]

Starts ``python -m ui.server`` on a free port with a fresh data folder and opens the app in
Debian's chromium (headless, through Playwright, as the browser tests do). With no job
queued or running, it shows each tab in turn and sums the CPU time of every Chromium process
over ``--seconds`` (after a few seconds to settle). Then it queues a LoRA job long enough to
outlast the measurements and measures the Runs tab with that job shown, and the Train tab,
while it trains. Targets (issue 35): under 2% of a core idle on any tab, under 10% while one
job trains. Writes its section of bench/UI.md (between the ``page CPU`` markers).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.ui import cpu_seconds, free_port, start, stop, wait_training, write_rows  # noqa: E402
from tests.ui.chromium import BROWSER_ARGS, CHROMIUM, nav  # noqa: E402

TABS = ["Data", "Train", "Runs", "Probing by layer", "Compare", "Sweeps", "Error analysis", "Export"]
BEGIN, END = "<!-- page CPU: bench/ui_page.py -->", "<!-- /page CPU -->"
IDLE_TARGET, TRAINING_TARGET = 0.02, 0.10


def browser_cpu() -> float:
    """CPU seconds so far of every Chromium process this script started (Playwright's node
    driver left out: it is the bench's, not the page's)."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower():
                times = child.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            continue
    return total


def measure(seconds: float, server_pid: int) -> tuple[float, float]:
    """Chromium's and the server's share of a core over ``seconds``."""
    browser, server, began = browser_cpu(), cpu_seconds(server_pid), time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - began
    return (browser_cpu() - browser) / elapsed, (cpu_seconds(server_pid) - server) / elapsed


def show(page: Any, tab: str, settle: float) -> None:
    nav(page, tab).click()
    page.mouse.move(0, 0)
    time.sleep(settle)


def references(page: Any, args: argparse.Namespace) -> list[tuple[str, str, float, float]]:
    """What any page costs this browser: a blank HTML page, and a Gradio page with one Markdown
    and no events (served from this process; its server CPU is not the app's: left out)."""
    import gradio as gr

    rows = []
    page.set_content("<h1>A blank page</h1><input>")
    time.sleep(args.settle)
    rows.append(("reference", "blank HTML page", measure(args.seconds, os.getpid())[0], float("nan")))
    with gr.Blocks() as bare:
        gr.Markdown("A bare Gradio page")
    _, url, _ = bare.launch(prevent_thread_lock=True, quiet=True)
    try:
        page.goto(url)
        page.get_by_text("A bare Gradio page").wait_for()
        time.sleep(args.settle)
        rows.append(("reference", "bare Gradio page (one Markdown, no events)",
                     measure(args.seconds, os.getpid())[0], float("nan")))  # fmt: skip
    finally:
        bare.close()
    for row in rows:
        print(row, flush=True)
    return rows


def run(args: argparse.Namespace) -> list[tuple[str, str, float, float]]:
    from gradio_client import Client, handle_file
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="bench-ui-page-"))
    data = work / "data"
    process, _ = start(data, port := free_port(), 1.0)
    url = f"http://127.0.0.1:{port}/"
    rows: list[tuple[str, str, float, float]] = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            if not args.skip_idle:
                rows.extend(references(page, args))
            page.goto(url)
            nav(page, "Data").wait_for()
            for tab in [] if args.skip_idle else TABS:
                show(page, tab, args.settle)
                rows.append(("idle", tab, *measure(args.seconds, process.pid)))
                print(rows[-1], flush=True)
            client = Client(url, verbose=False)
            dataset = client.predict(
                file=handle_file(str(write_rows(work / "bench.csv", args.rows))), api_name="/upload_dataset"
            )
            job = client.predict(dataset_id=dataset["id"], method="lora", epochs=8, max_length=64,
                                 batch_size=16, api_name="/launch")  # fmt: skip
            wait_training(client, job["id"])
            show(page, "Runs", 0)
            page.get_by_role("row", name=re.compile(rf"^{job['id']} ")).click()
            time.sleep(args.settle)
            rows.append(("one job training", "Runs (the job shown)", *measure(args.seconds, process.pid)))
            print(rows[-1], flush=True)
            show(page, "Train", args.settle)
            rows.append(("one job training", "Train", *measure(args.seconds, process.pid)))
            print(rows[-1], flush=True)
            status = client.predict(job_id=job["id"], log_tail=0, api_name="/job")["status"]
            if status != "running":
                raise SystemExit(f"the job ended ({status}) before the measurements did: raise --rows")
            browser.close()
    finally:
        stop(process, data)
    return rows


def section(
    rows: list[tuple[str, str, float, float]],
    args: argparse.Namespace,
    kept: list[str] | None = None,
    kept_when: str = "",
) -> str:
    """The section; ``kept``: table lines of an earlier run left as they were (``--skip-idle``)."""
    kept = kept or []
    import gradio

    def verdict(state: str, share: float) -> str:
        if state == "reference":
            return f"{share:.1%}"
        target = IDLE_TARGET if state == "idle" else TRAINING_TARGET
        return f"{share:.1%} ({'met' if share < target else 'MISSED'})"

    table = "\n".join(
        [*kept]
        + [
            f"| {state} | {tab} | {verdict(state, cpu)} | {'–' if server != server else f'{server:.1%}'} |"
            for state, tab, cpu, server in rows
        ]
    )
    when = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
    measured = f"{kept_when}; the training rows {when}" if kept else when
    command = " ".join(["python", "bench/ui_page.py", *sys.argv[1:]])
    return f"""{BEGIN}
## An open page's CPU (`bench/ui_page.py`)

Measured {measured} on {os.cpu_count()} CPU cores,
Python {platform.python_version()}, gradio {gradio.__version__}: `{command}`.

Headless Debian chromium, one page on the app, each tab shown in turn; *page CPU* sums every
Chromium process's CPU time over {args.seconds:g} s (after {args.settle:g} s to settle), as a
share of one core; *server CPU* is the app's process over the same time (its job supervisor
included, the training worker not). Targets: under 2% idle, under 10% while one job trains
(a LoRA job of 8 epochs on {args.rows} rows; on the Runs tab it is the job shown). The two
*reference* rows are what any page costs the same browser: a blank HTML page, and a Gradio
page with one Markdown and no events, whose status tracker keeps an animation-frame loop
running in gradio 6.17 (bench/UI.md, "Why").

| state | tab | page CPU | server CPU |
|---|---|---:|---:|
{table}
{END}
"""


def earlier_rows(path: Path) -> tuple[list[str], str]:
    """The reference and idle table lines of the section in ``path``, and when they were measured."""
    text = path.read_text() if path.exists() else ""
    if BEGIN not in text:
        return [], ""
    old = text.split(BEGIN, 1)[1].split(END, 1)[0]
    found = re.search(r"Measured (.+?) on \d+ CPU cores", old.replace("\n", " "))
    lines = [line for line in old.splitlines() if line.startswith(("| reference |", "| idle |"))]
    return lines, found.group(1).split(";")[0] if found else "earlier"


def write_section(path: Path, text: str) -> None:
    """Replace this script's section of ``path`` (or append it), leaving bench/ui.py's part."""
    old = path.read_text() if path.exists() else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        old = head + rest.split(END, 1)[1].lstrip("\n")
    path.write_text(old.rstrip("\n") + "\n\n" + text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each measurement lasts")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds after showing a tab, before measuring"
    )
    parser.add_argument(
        "--rows",
        type=int,
        default=6000,
        help="training rows (8 epochs): the job must outlast the two minutes",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "UI.md")
    parser.add_argument(
        "--skip-idle",
        action="store_true",
        help="measure only while a job trains; keep the reference and idle rows already in --out",
    )
    args = parser.parse_args()
    kept, kept_when = earlier_rows(args.out) if args.skip_idle else ([], "")
    text = section(run(args), args, kept, kept_when)
    write_section(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
