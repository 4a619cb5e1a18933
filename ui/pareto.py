"""The sweep's Pareto chart on the page: the SVG, and the click handler that opens a run.

The drawing lives in ``service.svg_charts`` so the HTML report (service layer) draws the
same chart without importing the UI; what only a live page needs, the click handler,
stays here. Each point carries ``data-key`` (its job id), so ``POINT_CLICK_JS`` sends that
id to the server the same way a row of the runs table does.
"""

from __future__ import annotations

from service.svg_charts import COLORS, COSTS, pareto_svg

__all__ = ["COLORS", "COSTS", "POINT_CLICK_JS", "pareto_svg"]

POINT_CLICK_JS = """
element.addEventListener('click', (event) => {
  const point = event.target.closest('[data-key]');
  if (point) trigger('select', {index: Number(point.dataset.key), value: point.dataset.key, selected: true});
});
"""
