"""The public report endpoint (/report), mixed into ``ui.endpoints.Endpoints``: the Compare
tab's "Download report" (and, for a sweep, the Sweeps tab) call the same method."""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio import FileData

from ui.callers import as_id, caller_is_local
from ui.exposure import redact


class ReportEndpoints:
    """Shareable HTML reports; needs ``api`` from :class:`ui.endpoints.Endpoints`."""

    api: Any

    def report(
        self, job_ids: list[int] | None = None, sweep_id: int | None = None, request: gr.Request | None = None
    ) -> FileData:
        """One self-contained HTML file (tables, inline SVG charts, every run's config) of the
        runs ``job_ids`` side by side, or of the sweep ``sweep_id``: a report to share.
        Callers from other machines get it without server paths, as /compare answers them."""
        # The same rule as Endpoints.shown; asked here because the Workbench must know
        # whether to redact before it renders (and names the redacted file apart).
        trusted = self.api.settings.admin_details or caller_is_local(request)
        ids = [as_id(i, "job_ids") for i in job_ids or []]
        sweep = as_id(sweep_id, "sweep_id") if sweep_id not in (None, "") else None
        return FileData(path=str(self.api.report(ids, sweep, redact=None if trusted else redact)))
