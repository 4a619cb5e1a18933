"""Shared test set-up: isolated data folders, offline Hugging Face, small real datasets."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"

# Under pytest-xdist (`make test` runs two workers), each worker and every process it starts
# computes on one thread: two workers of two torch threads each on 2 cores spun against each
# other and doubled the CPU time. Set before torch is imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

# Isolate everything a test run writes, and never touch the network (set before imports).
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="workbench-tests-"))
os.environ.setdefault("WORKBENCH_DATA_DIR", str(_SESSION_DIR / "runs"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from backend.settings import PROJECT_ROOT, Settings, apply_environment  # noqa: E402
from tests.tiny_models import TINY_BERT, TINY_LLAMA, use_tiny_models_cache  # noqa: E402

# The tiny random models for mechanics tests, in a models cache of this run's own that also
# links the real models in (tests/tiny_models.py); every process the tests start inherits it.
use_tiny_models_cache(Path(os.environ.get("WORKBENCH_MODELS_CACHE", PROJECT_ROOT / "models_cache")))
apply_environment(Settings.from_env())
__all__ = ["TINY_BERT", "TINY_LLAMA"]

POSITIVE = ["great", "wonderful", "excellent", "delightful", "superb", "moving", "brilliant", "fun"]
NEGATIVE = ["awful", "terrible", "boring", "dreadful", "dull", "painful", "weak", "tedious"]
NOUNS = ["movie", "film", "story", "plot", "cast", "ending", "script", "score"]


def sentiment_rows(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Short, clearly separable review-like sentences with pos/neg labels."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = "pos" if i % 2 == 0 else "neg"
        words = POSITIVE if label == "pos" else NEGATIVE
        rows.append((f"the {rng.choice(NOUNS)} was {rng.choice(words)} and {rng.choice(words)}", label))
    return rows


def write_csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    import csv

    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "label"])
        w.writerows(rows)
    return path


@pytest.fixture(scope="session")
def tiny_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """80 training rows + an implicit 10% split: a few seconds per method."""
    return write_csv(tmp_path_factory.mktemp("data") / "tiny.csv", sentiment_rows(80))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real datasets not found at {SHARED_DATA} (only present in the dev workspace)")
    return SHARED_DATA


# Under xdist, a module's tests run on one worker (its module-scoped fixtures, a few trained
# runs, are built once), and tests that share a session's server or cluster run on one worker,
# so it starts once.
SHARED_SERVICES = {"server": "ui-server", "client": "ui-server", "cluster": "ray-cluster"}


# tryfirst: xdist's worker reads the groups in a hook of its own (it appends "@group" to each
# test id), registered after this file and so called before it unless told otherwise. Without
# it no test had a group: the modules' fixtures, the app server and the Ray cluster were each
# built on both workers (tests/test_xdist_groups.py).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item)))


def group_of(item: pytest.Item) -> str:
    """The shared service a test uses, else its module."""
    names = getattr(item, "fixturenames", ())
    group = next((g for name, g in SHARED_SERVICES.items() if name in names), None)
    return group or item.nodeid.split("::")[0]
