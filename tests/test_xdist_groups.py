"""The suite's split over xdist workers (tests/conftest.py): a module's tests on one worker, and
every test of the app server or the Ray cluster on one worker. When the groups were silently
lost, both workers built each module's trained runs, started an app server and a Ray cluster,
and the suite took twice its time on a 2-core machine."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import group_of


def test_every_test_runs_in_its_group(request: Any) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("groups exist only on an xdist worker under --dist loadgroup (make test)")
    assert request.node.nodeid.endswith("@tests/test_xdist_groups.py")
    for item in request.session.items:
        assert item.nodeid.endswith(f"@{group_of(item)}"), item.nodeid
