"""How often the tabs' timers poll: fast while what a tab shows can change, slowly otherwise,
and not at all while another page is shown (``ui.nav``).

Every tick is a round trip through Gradio's queue and a redraw of whatever it sends, on every
open page: timers that polled every 2 s whether or not anything ran cost a busy browser half a
core while nothing happened (issue 35). Gradio itself skips ticks while the browser tab is hidden.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

# With nothing queued or running, a tab still looks this often, so a job started elsewhere (the
# CLI, another page) shows up; a job launched from this page wakes the Runs tab at once.
IDLE_SECONDS = 20.0


def pace(busy: bool, fast: float, previous: float | None) -> tuple[Any, float]:
    """The timer's new interval as an output (``gr.skip()`` when unchanged) and the interval."""
    seconds = fast if busy else IDLE_SECONDS
    return (gr.skip() if seconds == previous else seconds), seconds
