"""The HTML pieces a report is made of: escaped tables, number formats, the page itself.

Every cell goes through :func:`cell` (``html.escape``), so a run named ``<script>`` or a
label such as ``a & b`` reads as text in the file. The style sheet is inline: the report
must look the same opened offline, from a mail attachment, with nothing to fetch.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

DASH = "–"
STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #e5e7eb; }
.meta, .wb-caption, caption { color: #4b5563; font-size: 0.9em; }
caption { text-align: left; padding: 0.3em 0; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; }
th, td { border: 1px solid #d1d5db; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f4f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.reference td { font-style: italic; background: #fafafa; } tr.best td { background: #fef3c7; }
.matrices { display: flex; flex-wrap: wrap; gap: 1.5em; }
svg { width: 100%; max-width: 760px; height: auto; display: block; margin: 0.5em 0; }
pre { background: #f9fafb; border: 1px solid #e5e7eb; padding: 0.8em; overflow-x: auto; }
details { margin: 0.4em 0; } summary { cursor: pointer; font-weight: 600; }
"""


def cell(value: Any) -> str:
    """Any value as escaped text (None as a dash)."""
    return DASH if value is None else html.escape(str(value))


def number(value: float | None, digits: int = 3) -> str:
    """A score with ``digits`` decimals, the way the Compare tab shows it."""
    return DASH if value is None else f"{value:.{digits}f}"


def count(value: int | None, percent: float | None = None) -> str:
    """``12345`` -> "12,345", with the share of the model when known: "12,345 (0.05%)"."""
    if value is None:
        return DASH
    return f"{value:,}" + ("" if percent is None else f" ({percent:.2f}%)")


def learning_rate(lr: float | str | None, chosen_by_search: bool) -> str:
    """ "3e-03 (auto)" when the search chose it; a word ("auto") as it stands."""
    if lr is None:
        return DASH
    text = f"{lr:.0e}" if isinstance(lr, int | float) else str(lr)
    return text + (" (auto)" if chosen_by_search else "")


def table(
    headers: Sequence[str],
    rows: Sequence[tuple[Sequence[str], str]],
    *,
    caption: str = "",
    numeric: Sequence[int] = (),
) -> str:
    """A table of already-formatted cells, each escaped here; every row comes with its CSS
    class ("" for none); ``numeric`` columns are right-aligned; no ``headers``, no head row."""
    head = "".join(f"<th>{cell(h)}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if head else ""
    body = []
    for cells, css in rows:
        tds = "".join(
            f'<td class="num">{cell(c)}</td>' if i in numeric else f"<td>{cell(c)}</td>"
            for i, c in enumerate(cells)
        )
        body.append(f'<tr class="{css}">{tds}</tr>' if css else f"<tr>{tds}</tr>")
    title = f"<caption>{cell(caption)}</caption>" if caption else ""
    return f"<table>{title}{head}<tbody>{''.join(body)}</tbody></table>"


def section(title: str, body: str, note: str = "") -> str:
    """A titled part of the report (``body`` is HTML already built from escaped pieces)."""
    intro = f'<p class="meta">{cell(note)}</p>' if note else ""
    return f"<section><h2>{cell(title)}</h2>{intro}{body}</section>"


def document(title: str, meta: str, sections: Sequence[str]) -> str:
    """The whole page: one file, its style inline, no script and nothing fetched."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{cell(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{cell(title)}</h1><p class="meta">{cell(meta)}</p>' + "".join(sections) + "</body></html>\n"
    )
