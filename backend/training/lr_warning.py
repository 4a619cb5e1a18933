"""When to doubt the learning rate the search chose (``lr_choice_warning``, issue 36).

A short search favours rates that descend fast and then plateau: LoRA on a 6-class task chose
1e-2, its highest candidate, on a held-out loss of 1.233 against 1.638 for 3e-3; the run's best
epoch was then its third and it scored 0.842 where full fine-tuning scored 0.948. Two signs in a
finished run point at such a choice, and either is worth one sentence wherever the run's score
is read (the run page, the model card, the last JSON line of ``train``, Compare):

- the chosen rate is the highest or the lowest candidate: the best rate may lie outside the
  range searched, and the search cannot tell;
- the best epoch came within the first quarter of the epochs the run trained: the rate stopped
  paying off early, as a too-high one does.

Neither applies to a rate the user set, nor to a search that moved no held-out loss and took the
method's default (there the default, not the search, chose). The first applies to the method's
default too: it once did not (prefix tuning's default is its highest candidate, and the warning
fired on 7 of its 9 "auto" runs of bench/TASKS.md), and P-tuning at its default 3e-2, the top of
a grid of two, then lost 9 points on a 6-class set in silence where 0.1 scored 0.900 (issue 51).
A default at the edge of its grid is still the edge of what the search could see.
"""

from __future__ import annotations

from typing import Any

EARLY_SHARE = 0.25  # "early": the best epoch within this share of the epochs planned


def lr_choice_warning(summary: dict[str, Any]) -> str | None:
    """One sentence, or None, for a finished run's summary (keys ``lr_search``, ``method``,
    ``best_epoch``, ``epochs_run``)."""
    search = summary.get("lr_search")
    if not search or search.get("inconclusive") or len(search.get("candidates") or []) < 2:
        return None
    rates = sorted(c["lr"] for c in search["candidates"])
    chosen = search["chosen"]
    edge = "highest" if chosen >= rates[-1] else "lowest" if chosen <= rates[0] else None
    best, run = summary.get("best_epoch"), summary.get("epochs_run") or summary.get("epochs")
    early = bool(best and run and run >= 4 and best <= EARLY_SHARE * run)
    if edge is None and not early:
        return None
    searched = f"{rates[0]:g} to {rates[-1]:g}"
    reasons = []
    if edge == "highest":  # too high is the usual case (the module's docstring)
        reasons.append(f"it is the highest rate searched ({searched}), which a short search favours")
    elif edge:
        reasons.append(f"it is the lowest rate searched ({searched}), and a better one may lie below")
    if early:
        reasons.append(f"the best epoch came early ({best} of {run} trained), as with a rate too high")
    neighbour = _neighbour(rates, chosen, lower=edge != "lowest")
    advice = f"; compare a run at {neighbour:g}" if neighbour is not None else ""
    return f"The learning rate {chosen:g} may not suit this run: {' and '.join(reasons)}{advice}."


def _neighbour(rates: list[float], chosen: float, *, lower: bool) -> float | None:
    """The candidate next to ``chosen``: below it (the usual suspicion), or above a lowest one."""
    others = [r for r in rates if (r < chosen if lower else r > chosen)]
    if not others:
        return None
    return max(others) if lower else min(others)
