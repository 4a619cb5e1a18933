"""A rule the import contracts cannot check: no method key outside ``backend/methods/``.

Every fact about a method lives in its file (``MethodSpec``); code elsewhere asks the
spec (``mergeable``, ``resumable``, ``cli_flags``...) instead of comparing keys, so a new
method needs no edit outside ``backend/methods/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from backend.methods import registry
from tests.conftest import ROOT

SCANNED = ("app.py", "backend", "jobs", "service", "ui")
# Strings equal to a method key that name something else, by file (a homonym, not a method).
HOMONYMS = {
    ("backend/artifacts/save.py", "probe"): "the manifest entry holding a probe head's config (file format)",
}


def method_key_literals(source: str) -> list[tuple[int, str]]:
    """(line, key) of every string constant in ``source`` that is exactly a method key."""
    keys = set(registry.keys())
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in keys
    )


def scanned_files() -> list[Path]:
    files: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    methods = ROOT / "backend" / "methods"
    return [f for f in files if methods not in f.parents]


def test_the_scan_finds_a_key_in_code_and_not_in_prose() -> None:
    assert method_key_literals('gr.update(visible=method == "lora")\n') == [(1, "lora")]
    assert method_key_literals('KNOBS = {"prompt": 1}\nx = "lorax"\n') == [(1, "prompt")]
    assert method_key_literals('"""A docstring may say ("lora")."""\n') == []


def test_no_method_key_outside_backend_methods() -> None:
    files = scanned_files()
    assert any(f.name == "export.py" for f in files) and len(files) > 30  # the scan sees the code
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{line}: {key!r}"
        for path in files
        for line, key in method_key_literals(path.read_text(encoding="utf-8"))
        if (path.relative_to(ROOT).as_posix(), key) not in HOMONYMS
    ]
    assert not found, "method keys outside backend/methods/ (ask the MethodSpec instead):\n" + "\n".join(
        found
    )
