"""The job-layer cases of bench/faults.py: kills during checkpoint writes, a kill in the middle
of training followed by a resume, the database locked for 40 s, and a full disk.

Each case returns a ``Result``: how many times it was tried, how many lost nothing, and what
was seen. The harnesses are the tests' own (``tests/unit/training/test_checkpoint.py``,
``tests/jobs/conftest.py``), run here many more times and with production thresholds.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from backend.settings import Settings
from backend.training import checkpoint
from jobs.db import sqlite_file
from jobs.supervisor import Supervisor
from service.api import Workbench
from tests.conftest import sentiment_rows, write_csv
from tests.jobs.conftest import kill_workers, make_settings, wait_for, wait_running_step, wait_status
from tests.jobs.test_db_locked import hold_write_lock
from tests.unit.training import test_checkpoint as harness

Result = dict[str, Any]
LOCK_SECONDS = 40.0


def result(case: str, tried: int, ok: int, detail: str) -> Result:
    return {"case": case, "tried": tried, "ok": ok, "detail": detail}


@contextlib.contextmanager
def job_system(settings: Settings, **supervisor: Any) -> Iterator[Workbench]:
    """A Workbench and one in-process supervisor (production thresholds unless given)."""
    bench = Workbench(settings)
    sup = Supervisor(settings, poll_seconds=0.5, max_concurrent=1, **supervisor).start()
    try:
        yield bench
    finally:
        sup.stop(kill_workers=True)
        kill_workers(settings)


def lora_job(data: Path, epochs: int, **overrides: Any) -> dict[str, Any]:
    """A LoRA run of fixed length: the method's fixed learning rate, every epoch run."""
    base = {"data": str(data), "method": "lora", "epochs": epochs, "max_length": 16, "batch_size": 8}
    return {**base, "lr": None, "early_stopping_patience": 0, "seed": 0, **overrides}


# ---------------------------------------------------------------- kills during checkpoint writes


def checkpoint_write_kills(root: Path, kills: int) -> Result:
    """SIGKILL forked writers at random moments while they save checkpoints back to back; after
    each kill the checkpoint must load whole, every part from one and the same epoch."""
    root.mkdir(parents=True, exist_ok=True)
    data = write_csv(root / "tiny.csv", sentiment_rows(80))
    directory = root / "checkpoint"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the writer: one thread
    fitter = harness.small_fitter(data)
    harness.prime_optimizer(fitter)
    rng = random.Random(1234)
    resumable = inside = 0
    failures: list[str] = []
    with (root / "writer.log").open("wb") as log:
        server = harness.WriterServer(data, directory, log)
        try:
            seconds = float(server.reply(300).split()[1])
            epoch = harness.assert_resumable(directory, fitter, 1)
            window = 3 * max(seconds, 0.01)  # anywhere in the first three saves
            for _ in range(kills):
                pid = int(server.ask("loop"))
                time.sleep(rng.uniform(0.0, window))
                os.kill(pid, signal.SIGKILL)
                server.reply()
                live = harness.current_folder(directory).name
                inside += bool({p.name for p in directory.iterdir()} - {checkpoint.POINTER, live})
                try:
                    epoch = harness.assert_resumable(directory, fitter, epoch)
                    resumable += 1
                except Exception as exc:  # noqa: BLE001 - a failure is a figure here
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
        finally:
            server.close()
            torch.set_num_threads(threads)
    detail = (
        f"one save takes {seconds * 1000:.0f} ms; {inside} of {kills} kills landed inside a save "
        f"(a half-written folder was left beside the live one); {epoch - 1} saves completed between "
        "kills. After every kill the checkpoint loaded whole: weights, optimizer, scheduler, "
        "history, best state and RNG all from one epoch."
    )
    if failures:
        detail += f" Failures: {failures[:3]}"
    return result("kills during checkpoint writes", kills, resumable, detail)


# ---------------------------------------------------------------- kill mid-training, then resume


def final_state(job: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    folder = Path(job["artifact_dir"])
    metrics = json.loads((folder / "metrics.json").read_text())
    kept = {k: metrics[k] for k in ("accuracy", "macro_f1", "eval_loss", "best_epoch", "epochs_run")}
    kept["history"] = [{k: h[k] for k in ("epoch", "accuracy", "eval_loss")} for h in metrics["history"]]
    return load_file(str(folder / "adapter_model.safetensors")), kept


def kill_and_resume(root: Path, tries: int) -> Result:
    """SIGKILL a real worker at a random training step, resume the job through the API, and
    compare the result with an uninterrupted job of the same config: the adapter weights must be
    bit-identical and the metrics equal."""
    settings = make_settings(root / "resume")
    data = write_csv(root / "resume.csv", sentiment_rows(160, seed=1))
    config = lora_job(data, epochs=4)
    rng = random.Random(7)
    exact = 0
    notes: list[str] = []
    with job_system(settings) as bench:
        reference = wait_status(bench, bench.submit(config), timeout=600)
        assert reference["status"] == "succeeded", reference["error"]
        weights, metrics = final_state(reference)
        steps = int(reference["step"])
        for _ in range(tries):
            job_id = bench.submit(config)
            target = rng.randint(2, steps - 2)
            job = wait_for(
                lambda job_id=job_id, target=target: (
                    j if (j := bench.get_job(job_id, log_tail=0))["step"] and j["step"] >= target else None
                ),
                600,
                f"job {job_id} to reach step {target}",
                interval=0.05,
            )
            os.killpg(job["worker_pid"], signal.SIGKILL)
            killed = wait_status(bench, job_id, timeout=120)
            saved = checkpoint.last_epoch(Path(killed["artifact_dir"]) / "checkpoint")
            resumed = wait_status(bench, bench.resume(job_id), timeout=600)
            same = False
            if resumed["status"] == "succeeded":
                got_weights, got_metrics = final_state(resumed)
                same = got_metrics == metrics and got_weights.keys() == weights.keys()
                same = same and all(torch.equal(got_weights[k], weights[k]) for k in weights)
            exact += same
            verdict = "exact" if same else f"NOT exact ({resumed['status']})"
            notes.append(f"step {job['step']}/{steps} (checkpoint: epoch {saved or 'none'}): {verdict}")
    detail = (
        f"LoRA, 4 epochs of {steps // 4} steps; killed at " + "; ".join(notes) + ". Exact = the resumed "
        "job's adapter weights bit-identical to an uninterrupted job's, and its per-epoch accuracy "
        "and loss equal."
    )
    return result("kill mid-training, then resume", tries, exact, detail)


# ---------------------------------------------------------------- the database locked for 40 s


def db_locked(root: Path) -> Result:
    """Hold SQLite's write lock for 40 s (past the 30 s busy timeout) twice: once in the middle
    of a long job, once over the end of a short one, with a submission waiting in each. The jobs
    must succeed (not be judged hung for the heartbeats they could not write) and the
    submissions must be recorded once each."""
    settings = make_settings(root / "locked")
    long_data = write_csv(root / "locked-long.csv", sentiment_rows(600, seed=2))
    short_data = write_csv(root / "locked-short.csv", sentiment_rows(120, seed=2))
    db_file = sqlite_file(settings.db_url)
    assert db_file is not None
    ok, notes = 0, []
    with job_system(settings) as bench:
        tries = (("middle of a long job", long_data, 3), ("end of a short job", short_data, 1))
        for label, data, epochs in tries:
            job_id = bench.submit(lora_job(data, epochs=epochs))
            wait_running_step(bench, job_id)
            release = threading.Event()
            holder = threading.Thread(target=hold_write_lock, args=(db_file, release), daemon=True)
            holder.start()
            submitted: dict[str, Any] = {}
            started = time.monotonic()

            def submit(submitted: dict[str, Any] = submitted, started: float = started) -> None:
                try:
                    submitted["id"] = bench.submit(lora_job(short_data, epochs=1, seed=1))
                except Exception as exc:  # noqa: BLE001 - reported
                    submitted["error"] = f"{type(exc).__name__}: {exc}"[:200]
                submitted["seconds"] = time.monotonic() - started

            waiter = threading.Thread(target=submit, daemon=True)
            waiter.start()
            time.sleep(LOCK_SECONDS)
            release.set()
            holder.join(timeout=30)
            waiter.join(timeout=300)
            job = wait_status(bench, job_id, timeout=1800)
            log = Path(job["log_path"]).read_text()
            late = "could not record success yet" in log
            waited = "its success was recorded after the lock" if late else ""
            second = wait_status(bench, submitted["id"], timeout=900) if "id" in submitted else None
            good = job["status"] == "succeeded" and second is not None and second["status"] == "succeeded"
            ok += good
            notes.append(
                f"{label}: job {job['status']}"
                + (f" ({job['error']})" if job["error"] else "")
                + (f" ({waited})" if waited else "")
                + (
                    f", the submission made during the lock was recorded after {submitted['seconds']:.0f} s "
                    f"and {second['status']}"
                    if second
                    else f", the submission failed: {submitted.get('error')}"
                )
            )
    return result(f"database locked for {LOCK_SECONDS:.0f} s", 2, ok, "; ".join(notes) + ".")


# ---------------------------------------------------------------- a full disk


@contextlib.contextmanager
def small_disk(folder: Path, megabytes: int) -> Iterator[Path | None]:
    """A tmpfs of ``megabytes`` mounted at ``folder`` (None where mounting is not allowed)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        yield None
        return
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Write a filler file until the disk is full; returns it."""
    filler = folder / "filler.bin"
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as fh:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * size)
    return filler


def integrity(db_url: str) -> str:
    path = sqlite_file(db_url)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def full_disk(root: Path) -> Result:
    """The data folder (database, logs, checkpoints) on a 64 MB tmpfs. Try 1: full fine-tuning,
    whose checkpoint (~90 MB of weights and more of optimizer state) cannot fit. Try 2: the disk
    filled to the last byte while a LoRA job trains, and freed 15 s later. Each must end with a
    status and a reason (never stuck "running"), leave the database intact, and resume to success
    once there is room."""
    with small_disk(root / "disk", 64) as disk:
        if disk is None:
            return result("full disk", 0, 0, "not measured: mounting a tmpfs needs root")
        settings = make_settings(disk)
        data = write_csv(root / "disk.csv", sentiment_rows(600, seed=3))
        ok, notes = 0, []
        with job_system(settings) as bench:
            job_id = bench.submit(lora_job(data, epochs=2, method="full"))
            job = wait_status(bench, job_id, timeout=900)
            ok += job["status"] == "failed" and "space" in (job["error"] or "").lower()
            notes.append(f"full fine-tuning: {job['status']}: {(job['error'] or '').splitlines()[0][:240]}")
            # Room for LoRA again: the failed run's files go when the job is deleted.
            bench.delete(job_id)
            job_id = bench.submit(lora_job(data, epochs=6))
            wait_running_step(bench, job_id)
            filler = fill(disk)
            time.sleep(15)
            filler.unlink(missing_ok=True)
            job = wait_status(bench, job_id, timeout=900)
            reason = (job["error"] or "").splitlines()[0][:240] if job["error"] else ""
            if job["status"] != "succeeded":
                job = wait_status(bench, bench.resume(job_id), timeout=900)
            check = integrity(settings.db_url)
            ok += job["status"] == "succeeded" and check == "ok"
            ended = f"failed: {reason}, then resumed: {job['status']}" if reason else job["status"]
            notes.append(f"disk filled for 15 s during LoRA: {ended}; database integrity_check: {check}")
    return result("full disk (64 MB tmpfs)", 2, ok, "; ".join(notes) + ".")
