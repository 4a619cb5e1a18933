"""The app's own page navigation: a row of buttons, one ``gr.Column`` shown at a time.

Why not ``gr.Tabs``: in Gradio 6.17 the tab bar re-measures its overflow on every animation
frame, from an effect that re-runs for each tab never shown yet, once any event has updated a
component inside one (the page's load events do). An idle page then cost headless Chromium
17-60% of a core (bench/UI.md). Buttons and columns have no such effect. A page is hidden by a
CSS class (``HIDDEN_CSS``, passed to ``launch``) rather than ``visible``: a column made visible
after starting as ``visible=False`` did not always appear, and ``visible="hidden"`` left each
hidden page's empty space on screen.

Each page's ``select`` is its button's click, the trigger ``gr.Tab.select`` was, so a page reloads
what it shows when opened. A page's timer ticks only while the page is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

PAGE, HIDDEN = "wb-page", "wb-hidden"
HIDDEN_CSS = f".{HIDDEN} {{ display: none !important; }}"


@dataclass
class Page:
    """One page: its button in the navigation row and the column it shows."""

    name: str
    button: gr.Button
    column: gr.Column | None = None
    timer: gr.Timer | None = None

    @property
    def select(self) -> Callable[..., Any]:
        """Register a listener for the page being opened from the navigation row."""
        return self.button.click


@dataclass
class Navigation:
    """Build with ``Navigation.row(names)``, then ``with nav.page(name):`` for each page's
    content, then ``nav.wire()``. ``nav.open(name)`` gives the updates for ``nav.outputs`` that
    open a page from another event (a run clicked on the Sweeps page opens on Runs)."""

    pages: dict[str, Page] = field(default_factory=dict)

    @classmethod
    def row(cls, names: list[str]) -> Navigation:
        nav = cls()
        with gr.Row(elem_id="wb-nav", elem_classes="wb-nav", equal_height=True):
            for i, name in enumerate(names):
                button = gr.Button(name, variant=_variant(i == 0), size="md", min_width=100)
                nav.pages[name] = Page(name=name, button=button)
        return nav

    @contextmanager
    def page(self, name: str) -> Iterator[Page]:
        page = self.pages[name]
        first = next(iter(self.pages)) == name
        with gr.Column(elem_classes=_classes(first)) as column:
            page.column = column
            yield page

    @property
    def outputs(self) -> list[Any]:
        columns = [page.column for page in self.pages.values()]
        buttons = [page.button for page in self.pages.values()]
        return [*columns, *buttons, *self._timers()]

    def open(self, name: str) -> list[Any]:
        """Updates for ``outputs`` that show page ``name`` and only it."""
        if name not in self.pages:
            raise KeyError(f"no page named {name!r}")
        pages = self.pages.values()
        return [
            *(gr.Column(elem_classes=_classes(page.name == name)) for page in pages),
            *(gr.Button(variant=_variant(page.name == name)) for page in pages),
            *(gr.Timer(active=page.name == name) for page in pages if page.timer is not None),
        ]

    def wire(self, timers: dict[str, gr.Timer]) -> None:
        """Each button opens its page; ``timers`` (page name to timer) tick only on their page."""
        for name, timer in timers.items():
            self.pages[name].timer = timer
        for page in self.pages.values():
            page.button.click(
                lambda name=page.name: self.open(name),
                None,
                self.outputs,
                api_visibility="private",
                show_progress="hidden",
                queue=False,  # a click shows its page at once, even while the queue is busy
            )

    def _timers(self) -> list[gr.Timer]:
        return [page.timer for page in self.pages.values() if page.timer is not None]


def _classes(shown: bool) -> list[str]:
    return [PAGE] if shown else [PAGE, HIDDEN]


def _variant(selected: bool) -> Any:
    return "primary" if selected else "secondary"
