"""The web app's start must not import torch or transformers: they take seconds to import,
and the first page should not wait for them (the warm-up imports them after launch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_app_start_does_not_import_torch_or_transformers() -> None:
    code = (
        "import sys, service.api, ui.app\n"
        "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
