"""The shareable HTML report of compared runs or of a sweep, written beside the export zips."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backend.errors import ConfigError
from service.api_state import WorkbenchState
from service.report import comparison_report, sweep_report

MAX_IDS_IN_NAME = 6  # beyond this a file name would grow with the selection; a digest instead


class ReportApi(WorkbenchState):
    """Reports (mixed into ``Workbench``, which provides ``compare``, ``get_job``, ``get_sweep``)."""

    def report(
        self,
        job_ids: Sequence[int] | None = None,
        sweep_id: int | None = None,
        *,
        redact: Callable[[Any], Any] | None = None,
    ) -> Path:
        """Write one self-contained HTML report of ``job_ids`` (compared runs) or of the sweep
        ``sweep_id`` to ``<data>/exports/`` and return its path.

        ``redact`` is applied to every record before it is rendered: the UI passes its
        redaction for callers that may not see server paths, and the file then gets its own
        name, so a local caller's unredacted report never overwrites (or becomes) that one.
        """
        ids = list(dict.fromkeys(int(i) for i in job_ids or []))
        if ids and sweep_id is not None:
            raise ConfigError("a report covers either runs (job ids) or one sweep, not both; give one")
        if not ids and sweep_id is None:
            raise ConfigError("pick at least one run (or a sweep) to report on")
        scrub = redact or (lambda value: value)
        if sweep_id is not None:
            sweep = self.get_sweep(int(sweep_id))  # type: ignore[attr-defined]
            ids = [t["job_id"] for t in sweep["trials"]]
            compare, jobs = self._report_records(ids)
            page = sweep_report(scrub(sweep), scrub(compare), scrub(jobs))
            stem = f"sweep-{int(sweep_id)}"
        else:
            compare, jobs = self._report_records(ids)
            page = comparison_report(scrub(compare), scrub(jobs))
            stem = _runs_stem(ids)
        target = self.settings.data_dir / "exports" / f"{stem}-report{'-redacted' if redact else ''}.html"
        return _write_atomically(target, page)

    def _report_records(self, ids: list[int]) -> tuple[Any, list[Any]]:
        # compare() first: it names an unknown id ("no job N") before any detail is read
        compare = self.compare(ids)  # type: ignore[attr-defined]
        return compare, [self.get_job(i, log_tail=0) for i in ids]  # type: ignore[attr-defined]


def _runs_stem(ids: list[int]) -> str:
    if len(ids) <= MAX_IDS_IN_NAME:
        return "jobs-" + "-".join(map(str, ids))
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:10]
    return f"jobs-{len(ids)}-runs-{digest}"


def _write_atomically(target: Path, text: str) -> Path:
    """Two requests for the same report may overlap; a reader must never get half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the export zips beside it are not
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
