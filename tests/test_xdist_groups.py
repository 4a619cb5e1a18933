"""The suite's split over xdist workers (tests/conftest.py): a module's tests on one worker, and
every test of the app server or the Ray cluster on one worker. When the groups were silently
lost, both workers built each module's trained runs, started an app server and a Ray cluster,
and the suite took twice its time on a 2-core machine."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.conftest import group_of, longest_groups_first


def test_every_test_runs_in_its_group(request: Any) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("groups exist only on an xdist worker under --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@tests/test_xdist_groups.py")
    for item in request.session.items:
        assert item.nodeid.endswith(f"@{group_of(item)}"), item.nodeid


def test_the_longest_groups_come_first_each_in_one_piece(request: Any) -> None:
    """The session's own tests, their groups interleaved (as modules of one shared service may be
    collected apart), ordered by made-up figures: each group's tests come together and in their
    order, and the groups longest first (ties in the order they were first collected)."""
    by_group: dict[str, list[Any]] = {}
    for item in request.session.items:
        by_group.setdefault(group_of(item), []).append(item)
    groups = list(by_group)
    if len(groups) < 4:  # two with figures, two without to keep apart
        pytest.skip("needs tests from four groups or more (run with the suite)")
    mixed = [i for row in itertools.zip_longest(*by_group.values()) for i in row if i is not None]
    # the last group collected takes longest, the second next; the rest have no figure
    last, second = groups[-1], groups[1]
    seconds = {item.nodeid: 5.0 for item in by_group[last]} | {item.nodeid: 1.0 for item in by_group[second]}
    ordered = longest_groups_first(mixed, seconds)
    runs = [group_of(item) for item in ordered]
    assert list(dict.fromkeys(runs)) == [last, second] + [g for g in groups if g not in (last, second)]
    assert sum(a != b for a, b in itertools.pairwise(runs)) == len(groups) - 1  # each group in one piece
    for group, tests in by_group.items():
        assert [i for i in ordered if group_of(i) == group] == tests
