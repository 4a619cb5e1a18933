"""Charts as inline SVG text: the sweep's Pareto chart, and the bars and curves of a report.

Plain strings rather than a plotting library: the Sweeps tab puts the Pareto chart in its
page (``ui.pareto`` adds the click handler, which stays in the UI), and the HTML report
(``service.report``) embeds every chart in a file that must open offline, with no script.
Both import this module, so the chart lives below the UI and the arrows still point one
way. Every text drawn is escaped here.

Pareto: an SVG rather than a Gradio plot because each point must open its own run on a
click (``data-key`` holds its job id). Log scale for parameters and bytes (a grid over
rank spans decades), linear for seconds.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

WIDTH, HEIGHT = 640, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 20, 16, 48
COSTS = {
    "trainable_params": ("Trainable parameters", True),
    "train_seconds": ("Training time (s)", False),
    "adapter_bytes": ("Adapter size (bytes)", True),
}
COLORS = {"front": "#2563eb", "other": "#9ca3af", "best": "#dc2626"}
# One colour per run in bars and curves (Tableau 10: tells apart up to ten runs in print).
PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip


def _scale(
    values: Sequence[float], log: bool, lo_px: float, hi_px: float, bounds: tuple[float, float] | None = None
) -> Any:
    """``bounds``: the range the values cannot leave (a score's 0..1), so that the padding
    around equal values never puts 1.5 on an accuracy axis."""
    vs = [math.log10(v) if log else v for v in values]
    lo, hi = min(vs), max(vs)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])

    def to_px(v: float) -> float:
        x = math.log10(v) if log else v
        return lo_px + (x - lo) / (hi - lo) * (hi_px - lo_px)

    return to_px, (lo, hi)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [10.0**e for e in range(math.ceil(lo), math.floor(hi) + 1)]
    # The smallest 1-2-5 step giving at most 8 ticks: a fixed step cut to a tick count
    # would drop the top of the axis (a loss curve drawn above its last label).
    base = 10 ** math.floor(math.log10(max(hi - lo, 1e-9)))
    step = next(base * f for f in (0.1, 0.2, 0.5, 1, 2, 5, 10) if (hi - lo) / (base * f) <= 8)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


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


def _axes(
    fx: Callable[[float], float], xs: tuple[float, float], x_log: bool, x_title: str,
    fy: Callable[[float], float], ys: tuple[float, float], y_title: str, aria: str, css_class: str,
) -> list[str]:  # fmt: skip
    """The opening tag, both axes with their ticks and titles (shared by every plot here)."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{html.escape(aria)}" class="{css_class}">',
        _line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM),
        _line(LEFT, TOP, LEFT, HEIGHT - BOTTOM),
    ]
    parts += [_text(fx(t), HEIGHT - BOTTOM + 16, _label(t), "middle", 11) for t in _ticks(*xs, x_log)]
    parts += [_text(LEFT - 6, fy(t) + 4, f"{t:.3g}", "end", 11) for t in _ticks(*ys, False)]
    parts.append(_text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 10, x_title, "middle", 12))
    middle = (TOP + HEIGHT - BOTTOM) / 2
    rotated = f'transform="translate(14 {middle}) rotate(-90)"'
    parts.append(f'<text {rotated} text-anchor="middle" font-size="12">{html.escape(y_title)}</text>')
    return parts


def pareto_svg(
    trials: list[dict[str, Any]], cost: str, objective: str, best_id: int | None, *, clickable: bool = True
) -> str:
    """The chart for ``trials`` (sweep detail rows) with ``cost`` on x and ``objective`` on y.

    ``clickable=False`` for a report: no pointer cursor and no "click a point" hint, since
    nothing there listens for clicks.
    """
    title, log = COSTS[cost]
    points = [t for t in trials if t.get(objective) is not None and (t.get(cost) or 0) > 0]
    if not points:
        return "<p>No finished trial to plot yet.</p>"
    fx, xs = _scale([t[cost] for t in points], log, LEFT, WIDTH - RIGHT)
    intervals = [bar for t in points if (bar := _bar(t, objective))]
    spans = [t[objective] for t in points] + [end for ci in intervals for end in ci]  # bars fit too
    fy, ys = _scale(spans, False, HEIGHT - BOTTOM, TOP, bounds=(0.0, 1.0))
    x_title = title + (" (log scale)" if log else "")
    parts = _axes(fx, xs, log, x_title, fy, ys, objective, f"{objective} against {title}", "wb-pareto")
    front = sorted((t for t in points if t["pareto_by"][cost]), key=lambda t: t[cost])
    if len(front) > 1:  # the front as a staircase: what each extra unit of cost buys
        coords = " ".join(f"{fx(t[cost]):.1f},{fy(t[objective]):.1f}" for t in front)
        parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{COLORS["front"]}" stroke-dasharray="4 3"/>'
        )
    cursor = ' style="cursor:pointer"' if clickable else ""
    for t in points:  # error bars first, under the points
        if interval := _bar(t, objective):
            x, pooled = fx(t[cost]), t.get("n", 1) > 1
            kind, dashes = ("spread", ' stroke-dasharray="3 2"') if pooled else ("error", "")
            parts.append(
                f'<line class="wb-{kind}-bar" x1="{x:.1f}" x2="{x:.1f}" y1="{fy(interval[0]):.1f}" '
                f'y2="{fy(interval[1]):.1f}" stroke="{COLORS["other"]}" stroke-width="1.5"{dashes}/>'
            )
    for t in points:
        kind = "best" if t["job_id"] == best_id else ("front" if t["pareto_by"][cost] else "other")
        score = f"{objective} {t[objective]:.4f}"
        if t.get("n", 1) > 1:
            score = f"{objective} mean {t[objective]:.4f} ± {t['spread']:.4f} over {t['n']} seeds"
        tip = f"#{t['job_id']} {t['name']} · {score} · {title} {_label(t[cost])}"
        parts.append(
            f'<circle data-key="{t["job_id"]}" class="wb-point wb-{kind}" cx="{fx(t[cost]):.1f}" '
            f'cy="{fy(t[objective]):.1f}" r="{7 if kind == "best" else 5}" fill="{COLORS[kind]}"'
            f"{cursor}><title>{html.escape(tip)}</title></circle>"
        )
    parts.append("</svg>")
    hint = " Click a point to open its run." if clickable else ""
    legend = (
        f'<div class="wb-caption"><span style="color:{COLORS["best"]}">●</span> best run · '
        f'<span style="color:{COLORS["front"]}">●</span> on the Pareto front · '
        f'<span style="color:{COLORS["other"]}">●</span> dominated; a vertical bar: the 95% interval '
        "of the run's score; dashed, for runs that differ only in seed (one point at their "
        f"mean): ± one standard deviation over the seeds.{hint}</div>"
    )
    return "".join(parts) + legend


def _bar(point: dict[str, Any], objective: str) -> list[float] | None:
    """A point's vertical bar: the spread of pooled seeds (any objective), else the run's
    interval (stored for its score: accuracy for a label task)."""
    if point.get("n", 1) > 1 or objective in ("accuracy", "score"):
        return point.get("score_ci") or None
    return None


def truth_scatter_svg(true: Sequence[float], predicted: Sequence[float]) -> str:
    """A regression run's evaluation rows: the true score (x) against the prediction (y), on one
    scale, with the dashed line of a perfect prediction (y = x)."""
    if not len(true):
        return "<p>No evaluation rows to plot.</p>"
    both = [*map(float, true), *map(float, predicted)]
    fx, xs = _scale(both, False, LEFT, WIDTH - RIGHT)
    fy, ys = _scale(both, False, HEIGHT - BOTTOM, TOP)
    title = "predicted against true score"
    parts = _axes(fx, xs, False, "true score", fy, ys, "predicted score", title, "wb-scatter")
    lo, hi = xs
    parts.append(
        f'<line class="wb-identity" x1="{fx(lo):.1f}" y1="{fy(lo):.1f}" x2="{fx(hi):.1f}" y2="{fy(hi):.1f}" '
        f'stroke="{COLORS["other"]}" stroke-dasharray="4 3"/>'
    )
    parts += [
        f'<circle class="wb-row" cx="{fx(float(t)):.1f}" cy="{fy(float(p)):.1f}" r="2.5" '
        f'fill="{COLORS["front"]}" fill-opacity="0.55"/>'
        for t, p in zip(true, predicted, strict=True)
    ]
    parts.append("</svg>")
    caption = (
        '<div class="wb-caption">Each evaluation row: its true score (x) against the prediction (y); '
        "dashed: a perfect prediction. Points above it were predicted too high.</div>"
    )
    return "".join(parts) + caption


def bars_svg(
    bars: list[tuple[str, float | None]],
    *,
    reference: float | None = None,
    reference_label: str = "majority class",
    title: str,
) -> str:
    """Horizontal bars of scores in [0, 1], one per (label, value), with an optional dashed
    reference line (e.g. the majority-class accuracy a run has to beat), named ``reference_label``."""
    row, left, right, top = 26, 260, 70, 28
    height = top + row * len(bars) + 30
    span = WIDTH - left - right
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{html.escape(title)}" class="wb-bars">',
        _text(left, 16, title, "start", 12),
    ]
    for i, (label, value) in enumerate(bars):
        y = top + i * row
        parts.append(_text(left - 8, y + 15, label if len(label) <= 40 else label[:39] + "…", "end", 11))
        if value is None:
            parts.append(_text(left + 4, y + 15, "no result", "start", 11))
            continue
        width = max(0.0, min(1.0, value)) * span
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{width:.1f}" height="{row - 8}" fill="{color}"/>')
        parts.append(_text(left + width + 4, y + 15, f"{value:.3f}", "start", 11))
    bottom = top + row * len(bars)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(_text(left + tick * span, bottom + 16, f"{tick:g}", "middle", 10))
    if reference is not None:
        x = left + max(0.0, min(1.0, reference)) * span
        parts.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#111827" '
            f'stroke-dasharray="5 3"><title>{html.escape(reference_label)} {reference:.3f}</title></line>'
        )
    return "".join(parts) + "</svg>"


def curves_svg(curves: list[tuple[str, list[list[float]]]], *, x_title: str, y_title: str) -> str:
    """One polyline per (label, [[x, y], ...]) with a colour legend below; empty curves are
    left out (each run keeps its colour: the one of its place in ``curves``, as in the bars).
    Returns "" when none has a point."""
    drawn = [(i, label, points) for i, (label, points) in enumerate(curves) if points]
    if not drawn:
        return ""
    xs_all = [p[0] for _, _, points in drawn for p in points]
    ys_all = [p[1] for _, _, points in drawn for p in points]
    fx, xs = _scale(xs_all, False, LEFT, WIDTH - RIGHT)
    fy, ys = _scale(ys_all, False, HEIGHT - BOTTOM, TOP)
    parts = _axes(fx, xs, False, x_title, fy, ys, y_title, f"{y_title} against {x_title}", "wb-curves")
    legend = []
    for i, label, points in drawn:
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{fx(x):.1f},{fy(y):.1f}" for x, y in points)
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        legend.append(f'<span style="color:{color}">━</span> {html.escape(label)}')
    parts.append("</svg>")
    return "".join(parts) + f'<div class="wb-caption">{" · ".join(legend)}</div>'


def compare_scatter_svg(compare: Mapping[str, Any]) -> str:
    """Compared runs' accuracy against trainable parameters (log scale) as the Pareto chart
    draws a sweep: the front among them, the most accurate marked, each run's 95% interval as
    an error bar (the interval stored with the run, else the one Compare computed)."""
    from backend.sweeps import pareto_flags

    computed = {r["run"]: r["score_ci"] for r in (compare.get("significance") or {}).get("runs", [])}
    rows = compare.get("table", [])
    # accuracy, or for runs of a task without it (regression) their score, the primary metric
    objective = (
        "accuracy" if all(r.get("accuracy") is not None or r.get("score") is None for r in rows) else "score"
    )
    points = [
        {
            "job_id": row["id"],
            "name": row["name"],
            objective: row.get(objective),
            "trainable_params": row.get("trainable_params"),
            "score_ci": row.get("score_ci") or computed.get(f"job {row['id']}"),
        }
        for row in rows
    ]
    flags = pareto_flags(points, {objective: "max", "trainable_params": "min"})
    for point, flag in zip(points, flags, strict=True):
        point["pareto_by"] = {"trainable_params": flag}
    scored = [p for p in points if p[objective] is not None]
    best = max(scored, key=lambda p: (p[objective], -(p["trainable_params"] or 0)), default=None)
    best_id = best["job_id"] if best else None
    return pareto_svg(points, "trainable_params", objective, best_id, clickable=False)
