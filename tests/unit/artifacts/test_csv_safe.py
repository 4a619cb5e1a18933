"""CSV files the app writes for people: formula-like cells are quoted (OWASP CSV injection)."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from backend.artifacts.csv_safe import escape_cell, write_csv


@pytest.mark.parametrize(
    ("cell", "written"),
    [
        ("=1+1", "'=1+1"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("-", "'-"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("a=1", "a=1"),
        ("plain text", "plain text"),
        ("", ""),
        # plain numbers cannot hold a formula, and labels like -1 must survive a round trip
        ("-2", "-2"),
        ("+1.5e3", "+1.5e3"),
        ("-.5", "-.5"),
        (-2, -2),
        (0.25, 0.25),
        (None, None),
    ],
)
def test_escape_cell(cell: object, written: object) -> None:
    assert escape_cell(cell) == written


def test_write_csv_escapes_cells_and_headers(tmp_path: Path) -> None:
    frame = pd.DataFrame({"=text": ['=HYPERLINK("x")', "fine"], "label": ["-1", "@pos"], "p": [0.5, -0.25]})
    write_csv(frame, tmp_path / "out.csv")
    rows = list(csv.reader((tmp_path / "out.csv").open(newline="")))
    assert rows == [["'=text", "label", "p"], ['\'=HYPERLINK("x")', "-1", "0.5"], ["fine", "'@pos", "-0.25"]]
    assert frame.iloc[0, 0] == '=HYPERLINK("x")', "the caller's frame is not changed"
