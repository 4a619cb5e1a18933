"""Run code as a user elsewhere would: a new interpreter, outside the project, offline.

Each script runs in a fresh namespace with its own folder as the working folder, and prints one
``RESULT <json>`` line. Several scripts can share one interpreter (``fresh_python_each``): they
share its imports, the seconds that dominate a fresh process, and nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from backend.settings import Settings

RESULT = "RESULT "
# Runs each (folder, script) pair in turn: chdir, then the script as __main__ in a new namespace.
RUN_EACH = """
import os, runpy, sys
for folder, script in zip(sys.argv[1::2], sys.argv[2::2]):
    os.chdir(folder)
    runpy.run_path(script, run_name="__main__")
"""


def fresh_python_each(jobs: list[tuple[Path, str]]) -> list[Any]:
    """Run each ``(folder, code)`` in one new interpreter (no workbench variables, no
    PYTHONPATH, offline, the tests' models cache as HF_HOME); each code's RESULT, in order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKBENCH_", "PYTHONPATH"))}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(Settings.from_env().models_cache))
    with tempfile.TemporaryDirectory() as scripts:
        args = []
        for i, (folder, code) in enumerate(jobs):
            script = Path(scripts) / f"script_{i}.py"
            script.write_text(code)
            args += [str(folder), str(script)]
        proc = subprocess.run(
            [sys.executable, "-c", RUN_EACH, *args],
            cwd=jobs[0][0],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    assert len(lines) == len(jobs), proc.stdout[-3000:]
    return [json.loads(line[len(RESULT) :]) for line in lines]


def fresh_python(code: str, cwd: Path) -> Any:
    """Run ``code`` in a new interpreter outside the project (see ``fresh_python_each``)."""
    return fresh_python_each([(cwd, code)])[0]
