"""The sweep's Pareto chart: accuracy against a cost, as an SVG whose points are links.

An SVG rather than a Gradio plot: every point must open its own run on a click, and a
native plot reports brushed ranges, not points. Each point carries ``data-key`` (its job
id), so the page's click handler (``POINT_CLICK_JS``) sends that id to the server the same
way a row of the runs table does. Log scale for parameters and bytes (a grid over rank
spans decades), linear for seconds.
"""

from __future__ import annotations

import html
import math
from typing import Any

WIDTH, HEIGHT = 640, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 20, 16, 48
COSTS = {
    "trainable_params": ("Trainable parameters", True),
    "train_seconds": ("Training time (s)", False),
    "adapter_bytes": ("Adapter size (bytes)", True),
}
COLORS = {"front": "#2563eb", "other": "#9ca3af", "best": "#dc2626"}
POINT_CLICK_JS = """
element.addEventListener('click', (event) => {
  const point = event.target.closest('[data-key]');
  if (point) trigger('select', {index: Number(point.dataset.key), value: point.dataset.key, selected: true});
});
"""


def _scale(values: list[float], log: bool, lo_px: float, hi_px: float) -> Any:
    vs = [math.log10(v) if log else v for v in values]
    lo, hi = min(vs), max(vs)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad

    def to_px(v: float) -> float:
        x = math.log10(v) if log else v
        return lo_px + (x - lo) / (hi - lo) * (hi_px - lo_px)

    return to_px, (lo, hi)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [10.0**e for e in range(math.ceil(lo), math.floor(hi) + 1)]
    step = 10 ** math.floor(math.log10(max(hi - lo, 1e-9))) / 2
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)][:12]


def _label(v: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= size:
            return f"{v / size:g}{unit}"
    return f"{v:g}"


def _line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="currentColor"/>'


def _text(x: float, y: float, text: str, anchor: str, size: int) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}">{html.escape(text)}</text>'
    )


def pareto_svg(trials: list[dict[str, Any]], cost: str, objective: str, best_id: int | None) -> str:
    """The chart for ``trials`` (sweep detail rows) with ``cost`` on x and ``objective`` on y."""
    title, log = COSTS[cost]
    points = [t for t in trials if t.get(objective) is not None and (t.get(cost) or 0) > 0]
    if not points:
        return "<p>No finished trial to plot yet.</p>"
    fx, (xlo, xhi) = _scale([t[cost] for t in points], log, LEFT, WIDTH - RIGHT)
    fy, (ylo, yhi) = _scale([t[objective] for t in points], False, HEIGHT - BOTTOM, TOP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{objective} against {html.escape(title)}" class="wb-pareto">',
        _line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM),
        _line(LEFT, TOP, LEFT, HEIGHT - BOTTOM),
    ]
    for tick in _ticks(xlo, xhi, log):
        x = fx(tick)
        parts.append(_text(x, HEIGHT - BOTTOM + 16, _label(tick), "middle", 11))
    for tick in _ticks(ylo, yhi, False):
        y = fy(tick)
        parts.append(_text(LEFT - 6, y + 4, f"{tick:.3g}", "end", 11))
    parts.append(
        _text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 10, title + (" (log scale)" if log else ""), "middle", 12)
    )
    middle = (TOP + HEIGHT - BOTTOM) / 2
    rotated = f'transform="translate(14 {middle}) rotate(-90)"'
    parts.append(f'<text {rotated} text-anchor="middle" font-size="12">{objective}</text>')
    front = sorted((t for t in points if t["pareto_by"][cost]), key=lambda t: t[cost])
    if len(front) > 1:  # the front as a staircase: what each extra unit of cost buys
        coords = " ".join(f"{fx(t[cost]):.1f},{fy(t[objective]):.1f}" for t in front)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{COLORS["front"]}" stroke-dasharray="4 3"/>'
        )
    for t in points:
        kind = "best" if t["job_id"] == best_id else ("front" if t["pareto_by"][cost] else "other")
        tip = f"#{t['job_id']} {t['name']} · {objective} {t[objective]:.4f} · {title} {_label(t[cost])}"
        parts.append(
            f'<circle data-key="{t["job_id"]}" class="wb-point wb-{kind}" cx="{fx(t[cost]):.1f}" '
            f'cy="{fy(t[objective]):.1f}" r="{7 if kind == "best" else 5}" fill="{COLORS[kind]}" '
            f'style="cursor:pointer"><title>{html.escape(tip)}</title></circle>'
        )
    parts.append("</svg>")
    legend = (
        f'<div class="wb-caption"><span style="color:{COLORS["best"]}">●</span> best run · '
        f'<span style="color:{COLORS["front"]}">●</span> on the Pareto front · '
        f'<span style="color:{COLORS["other"]}">●</span> dominated. Click a point to open its run.</div>'
    )
    return "".join(parts) + legend
