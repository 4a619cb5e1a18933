"""Debian's chromium as the browser tests and bench/ui_page.py launch it (headless, via Playwright)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
# No sandbox (root in a container), no GPU, and none of the background traffic a fresh profile
# starts: the page's own work is what the tests wait for and what the bench measures.
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def nav(page: Any, name: str) -> Any:
    """The app's navigation button for page ``name`` (ui.nav: a row of buttons, not tabs)."""
    return page.locator("#wb-nav").get_by_role("button", name=name, exact=True)
