"""The evaluation predictions file and calibration figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.artifacts.predictions import calibration, read_predictions, write_predictions
from backend.data.prepare import Split


def test_predictions_round_trip(tmp_path: Path) -> None:
    split = Split(texts=["good", "bad", "=cmd()"], pairs=None, labels=[1, 0, 0], rows=[4, 7, 9])
    probs = np.array([[0.2, 0.8], [0.4, 0.6], [0.9, 0.1]])
    write_predictions(tmp_path, split, probs, ["neg", "pos"])
    frame = read_predictions(tmp_path)
    assert frame is not None
    assert frame["row"].tolist() == [4, 7, 9]
    assert frame["predicted"].tolist() == ["pos", "pos", "neg"]
    assert frame["correct"].tolist() == [True, False, True]
    assert frame["confidence"].tolist() == pytest.approx([0.8, 0.6, 0.9])
    assert np.allclose(np.stack(frame["probs"].to_numpy()), probs)
    assert read_predictions(tmp_path / "missing") is None


def test_expected_calibration_error() -> None:
    # Two bins used: (0.5, 0.6] with confidence 0.55 and accuracy 0.5; (0.9, 1.0] with 0.95 and 1.0.
    confidence = np.array([0.55, 0.55, 0.95, 0.95])
    correct = np.array([1, 0, 1, 1])
    result = calibration(confidence, correct)
    assert [b["rows"] for b in result["bins"]] == [2, 2]
    assert result["ece"] == pytest.approx(0.5 * 0.05 + 0.5 * 0.05)
    perfect = calibration(np.array([1.0, 1.0]), np.array([1, 1]))
    assert perfect["ece"] == 0.0
