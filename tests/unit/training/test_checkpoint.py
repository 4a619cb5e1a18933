"""Checkpoints: a resumed run is bit-identical to an uninterrupted one, and no kill breaks one.

The processes that get SIGKILLed are started from this file too (see ``main`` at the bottom):
``die-after`` trains and kills itself right after an epoch's checkpoint; ``writer`` builds a
small real Fitter once, then forks writers that save checkpoints in a loop until the test
kills them, so each of the many kills costs milliseconds instead of a Python start-up.
"""

from __future__ import annotations

import errno
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from backend.run import run_training
from backend.training import checkpoint
from backend.training.callbacks import Callback
from backend.training.config import TrainConfig, load_data
from backend.training.loop import Fitter
from backend.training.setup import build_model
from tests.tiny_models import TINY_BERT

ROOT = Path(__file__).resolve().parents[3]
EPOCHS = 3
KILLED_AFTER = 1
KILLS = 16


def config(data: Path) -> TrainConfig:
    # LoRA has dropout (0.1), so epoch 2 onwards differ unless the RNG state is restored;
    # lr=None is the method's fixed rate (no search), patience 0 always runs every epoch.
    return TrainConfig(
        data=str(data),
        model=TINY_BERT,  # resuming is mechanics: the tiny random model has every state to restore
        method="lora",
        epochs=EPOCHS,
        batch_size=16,
        max_length=16,
        lr=None,
        early_stopping_patience=0,
        max_train_samples=32,  # two optimizer steps an epoch: enough to tell states apart
        device="cpu",
    )


def small_fitter(data: Path) -> Fitter:
    """A real Fitter (LoRA on the tiny BERT) without training anything."""
    from backend.catalogue import load_tokenizer, model_info
    from backend.data.batching import Encoded

    cfg = config(data)
    prepared = load_data(cfg)
    info = model_info(cfg.model)
    tokenizer = load_tokenizer(info)
    model = build_model(cfg, info, prepared.label_names, tokenizer.pad_token_id)
    train = Encoded(tokenizer, prepared.train, cfg.max_length)
    evals = Encoded(tokenizer, prepared.eval, cfg.max_length)
    return Fitter(model, cfg, train, evals, prepared.label_names, torch.device("cpu"), Callback())


def trainable(fitter: Fitter) -> dict[str, torch.nn.Parameter]:
    return {n: p for n, p in fitter.model.named_parameters() if p.requires_grad}


def current_folder(directory: Path) -> Path:
    return directory / (directory / checkpoint.POINTER).read_text().strip()


def same(a: Any, b: Any) -> bool:
    """Exact equality through the nested dicts/lists of a state dict."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def same_tensors(a: Path, b: Path) -> bool:
    return same(load_file(str(a)), load_file(str(b)))


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: far faster on a busy machine, and the killed process gets the same
    count, so its CPU reductions (and so its weights) are bit-identical to this process's."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def keep_global_rng() -> Iterator[None]:
    """Loading a checkpoint sets the global generators; leave them as other tests expect."""
    states = torch.get_rng_state(), np.random.get_state(), random.getstate()
    yield
    torch.set_rng_state(states[0])
    np.random.set_state(states[1])
    random.setstate(states[2])


# ------------------------------------------------------------------ bit-identical resume


@pytest.fixture(scope="module")
def runs(one_thread: None, tiny_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An uninterrupted run, and one SIGKILLed (in its own process) after epoch 1's checkpoint."""
    base = tmp_path_factory.mktemp("resume")
    run_training(config(tiny_csv), base / "straight", checkpoint_dir=base / "straight-ckpt")
    args = ["die-after", str(torch.get_num_threads()), str(KILLED_AFTER), str(tiny_csv)]
    args += [str(base / "killed"), str(base / "killed-ckpt")]
    killed = subprocess.run(
        [sys.executable, "-m", "tests.unit.training.test_checkpoint", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert checkpoint.last_epoch(base / "killed-ckpt") == KILLED_AFTER
    assert not (base / "killed" / "metrics.json").exists()
    return {"base": base, "data": tiny_csv}


def resume(runs: dict[str, Path], name: str) -> Path:
    """Resume the killed run into ``name``; returns its last checkpoint's folder."""
    base = runs["base"]
    run_training(
        config(runs["data"]),
        base / name,
        checkpoint_dir=base / f"{name}-ckpt",
        resume_from=base / "killed-ckpt",
    )
    return current_folder(base / f"{name}-ckpt")


def test_resumed_run_is_bit_identical_to_an_uninterrupted_one(runs: dict[str, Path]) -> None:
    base = runs["base"]
    resumed_last = resume(runs, "resumed")
    straight_last = current_folder(base / "straight-ckpt")
    # The exported adapter (the best epoch's weights) and the last epoch's full training state.
    assert same_tensors(
        base / "straight" / "adapter_model.safetensors", base / "resumed" / "adapter_model.safetensors"
    )
    for name in ("trainable.safetensors", "best.safetensors", "rng.safetensors"):
        assert same_tensors(straight_last / name, resumed_last / name), name
    optimizer = [torch.load(f / "optimizer.pt", weights_only=True) for f in (straight_last, resumed_last)]
    assert same(*optimizer)
    straight, resumed = (json.loads((base / r / "metrics.json").read_text()) for r in ("straight", "resumed"))
    assert [h["epoch"] for h in resumed["history"]] == list(range(1, EPOCHS + 1))
    for key in ("history", "best", "accuracy", "macro_f1", "eval_loss", "best_epoch", "epochs_run"):
        assert resumed[key] == straight[key], key


@pytest.mark.parametrize("skipped", ["_restore_weights", "_restore_optimizer", "_restore_rng"])
def test_resume_without_restoring_state_differs(
    runs: dict[str, Path], skipped: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control: the comparison above notices each part of the state going missing."""
    monkeypatch.setattr(checkpoint, skipped, lambda *args: None)
    last = resume(runs, f"without{skipped}")
    assert not same_tensors(
        current_folder(runs["base"] / "straight-ckpt") / "trainable.safetensors",
        last / "trainable.safetensors",
    )


# ------------------------------------------------------------------ kills during the write


def stamp(fitter: Fitter, epoch: int) -> None:
    """Make every part of the saved state say which epoch it belongs to, so a mix shows."""
    with torch.no_grad():
        for p in trainable(fitter).values():
            p.fill_(epoch)
        for state in fitter.optimizer.state.values():
            for value in state.values():
                value.fill_(epoch)
    fitter.scheduler.last_epoch = epoch
    fitter.step = 5 * epoch
    fitter.history = [{"epoch": e} for e in range(1, epoch + 1)]
    fitter.best = {"epoch": epoch}
    fitter.best_state = {n: torch.full_like(p, -epoch) for n, p in trainable(fitter).items()}
    torch.manual_seed(epoch)
    np.random.seed(epoch)
    random.seed(epoch)


def assert_resumable(directory: Path, fitter: Fitter, previous: int) -> int:
    """The checkpoint loads into a fresh Fitter, and all of it is from one and the same epoch."""
    epoch = checkpoint.last_epoch(directory)
    assert epoch is not None and epoch >= previous
    with torch.no_grad():
        for p in trainable(fitter).values():
            p.zero_()
    fresh = Fitter(
        fitter.model, fitter.cfg, fitter.train, fitter.evals, fitter.label_names, fitter.device, Callback()
    )
    assert checkpoint.load(directory, fresh) == epoch
    assert all(torch.all(p == epoch) for p in trainable(fresh).values())
    optimizer_state = [v for state in fresh.optimizer.state.values() for v in state.values()]
    assert optimizer_state and all(torch.all(v == epoch) for v in optimizer_state)
    assert fresh.scheduler.last_epoch == epoch and fresh.step == 5 * epoch
    assert fresh.history == [{"epoch": e} for e in range(1, epoch + 1)] and fresh.best == {"epoch": epoch}
    assert fresh.best_state is not None and all(torch.all(v == -epoch) for v in fresh.best_state.values())
    assert torch.equal(torch.get_rng_state(), torch.Generator().manual_seed(epoch).get_state())
    assert same(list(np.random.get_state()), list(np.random.RandomState(epoch).get_state()))
    assert random.getstate() == random.Random(epoch).getstate()
    return epoch


class WriterServer:
    """The ``writer`` process's pipes, with a deadline on every reply."""

    def __init__(self, data: Path, directory: Path, log: IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.unit.training.test_checkpoint",
                "writer",
                "1",
                str(data),
                str(directory),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        )
        self.pending = b""

    def ask(self, command: str, timeout: float = 60) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        return self.reply(timeout)

    def reply(self, timeout: float = 60) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(deadline - time.monotonic(), 0))
            assert ready, "the writer process did not answer in time"
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            assert chunk, "the writer process exited (its stderr is in writer.log)"
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode()

    def close(self) -> None:
        """End of input ends the server; a stuck one is killed."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def fitter(one_thread: None, tiny_csv: Path) -> Fitter:
    built = small_fitter(tiny_csv)
    prime_optimizer(built)
    return built


def test_kills_during_checkpoint_writes_always_leave_a_resumable_checkpoint(
    fitter: Fitter, tiny_csv: Path, tmp_path: Path
) -> None:
    directory = tmp_path / "checkpoint"
    rng = random.Random(1234)
    with (tmp_path / "writer.log").open("wb") as log:
        server = WriterServer(tiny_csv, directory, log)
        try:
            ready, seconds = server.reply(300).split()
            assert ready == "ready"  # epoch 1 is saved: from now on one must always load
            epoch, interrupted = assert_resumable(directory, fitter, 1), 0
            # Kill anywhere in the first few saves, however fast this disk is.
            window = 3 * max(float(seconds), 0.01)
            for _ in range(KILLS):
                pid = int(server.ask("loop"))
                time.sleep(rng.uniform(0.0, window))
                os.kill(pid, signal.SIGKILL)
                status = int(server.reply())
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, "the writer failed"
                live = current_folder(directory).name
                interrupted += bool({p.name for p in directory.iterdir()} - {checkpoint.POINTER, live})
                before, epoch = epoch, assert_resumable(directory, fitter, epoch)
                # A machine busier than when the first save was timed saves slower: a kill that
                # found no save completed widens the window, so that some complete and some not.
                window *= 1.5 if epoch == before else 1.0
            # One complete save sweeps whatever the kills left behind.
            server.ask("once")  # the writer's pid
            status = int(server.reply())
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            assert sorted(p.name for p in directory.iterdir()) == [
                checkpoint.POINTER,
                f"epoch-{epoch + 1:04d}",
            ]
            assert assert_resumable(directory, fitter, epoch) == epoch + 1
        finally:
            server.close()
    assert epoch > 1 + KILLS // 4, "the writers hardly ever completed a save"
    assert interrupted >= KILLS // 4, f"only {interrupted} of {KILLS} kills landed inside a save"


def test_a_save_that_fills_the_disk_gives_its_space_back(
    fitter: Fitter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "checkpoint"
    stamp(fitter, 1)
    checkpoint.save(directory, fitter, 1)

    def full_disk() -> None:  # called after the weights and optimizer files are written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint, "_rng_json", full_disk)
    stamp(fitter, 2)
    with pytest.raises(OSError, match="No space left"):
        checkpoint.save(directory, fitter, 2)
    # The half-written epoch 2 is gone at once (not at the next save); epoch 1 is still whole.
    assert sorted(p.name for p in directory.iterdir()) == [checkpoint.POINTER, "epoch-0001"]
    monkeypatch.undo()
    assert assert_resumable(directory, fitter, 1) == 1


def test_a_flat_checkpoint_of_older_versions_still_resumes_and_is_replaced(
    fitter: Fitter, tmp_path: Path
) -> None:
    directory = tmp_path / "checkpoint"
    stamp(fitter, 4)
    checkpoint.save(directory, fitter, 4)
    # The older layout: the same files straight in the checkpoint folder, no pointer, no RNG.
    for path in current_folder(directory).iterdir():
        if path.name in checkpoint.LEGACY_FILES:
            path.rename(directory / path.name)
    shutil.rmtree(current_folder(directory))
    (directory / checkpoint.POINTER).unlink()
    assert checkpoint.last_epoch(directory) == 4
    assert checkpoint.resolved_settings(directory) is None  # stamp() records no "auto" choices
    fresh = Fitter(
        fitter.model, fitter.cfg, fitter.train, fitter.evals, fitter.label_names, fitter.device, Callback()
    )
    assert checkpoint.load(directory, fresh) == 4 and fresh.step == 20
    stamp(fitter, 5)
    checkpoint.save(directory, fitter, 5)
    assert sorted(p.name for p in directory.iterdir()) == [checkpoint.POINTER, "epoch-0005"]
    assert assert_resumable(directory, fitter, 5) == 5


# ------------------------------------------------------------------ the processes that get killed


class DieAfter(Callback):
    """SIGKILLs its own process right after the checkpoint of ``epoch`` (a crash, no clean-up)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_checkpoint(self, epoch: int, path: str) -> None:
        if epoch == self.epoch:
            os.kill(os.getpid(), signal.SIGKILL)


def write_checkpoints(fitter: Fitter, directory: Path, count: int | None) -> None:
    """Save epoch after epoch, continuing from the checkpoint there, as a resumed job would."""
    epoch = (checkpoint.last_epoch(directory) or 0) + 1
    while count is None or count > 0:
        stamp(fitter, epoch)
        checkpoint.save(directory, fitter, epoch)
        epoch += 1
        count = None if count is None else count - 1


def prime_optimizer(fitter: Fitter) -> None:
    """Give AdamW its per-parameter state (zero gradients: the weights are overwritten anyway)."""
    for p in trainable(fitter).values():
        p.grad = torch.zeros_like(p)
    fitter.optimizer.step()
    fitter.optimizer.zero_grad(set_to_none=True)


def serve_writers(data: Path, directory: Path) -> None:
    """Answer 'loop' (a writer that saves until killed) and 'once' (one save) with forked writers."""
    fitter = small_fitter(data)
    prime_optimizer(fitter)
    stamp(fitter, 1)
    started = time.perf_counter()
    checkpoint.save(directory, fitter, 1)
    seconds = time.perf_counter() - started

    def reply(text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()  # before any fork: a child must not inherit buffered output

    reply(f"ready {seconds:.6f}")
    for line in sys.stdin:
        command = line.strip()
        if command not in ("loop", "once"):
            break
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                write_checkpoints(fitter, directory, None if command == "loop" else 1)
                code = 0
            finally:
                os._exit(code)  # never return into the server's loop
        reply(str(pid))
        reply(str(os.waitpid(pid, 0)[1]))


def main(argv: list[str]) -> None:
    mode, threads, *rest = argv
    # The same thread count as the test process: CPU reductions are then bit-identical. The
    # writer server uses one, so its forked writers never meet a half-copied OpenMP pool.
    torch.set_num_threads(int(threads))
    if mode == "die-after":
        epoch, data, out, ckpt = rest
        run_training(config(Path(data)), out, DieAfter(int(epoch)), checkpoint_dir=Path(ckpt))
        raise SystemExit("the run finished instead of being killed")
    if mode == "writer":
        serve_writers(Path(rest[0]), Path(rest[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
