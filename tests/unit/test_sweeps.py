"""What a sweep tries: axes checked like single runs, grids, search ranges, Pareto flags."""

from __future__ import annotations

import pytest

from backend.errors import ConfigError
from backend.methods import registry
from backend.sweeps import apply_point, grid_points, pareto_flags, parse_axis, point_text, search_range


def test_axes_are_typed_and_checked_against_the_settings_metadata() -> None:
    rank = parse_axis("lora", "rank=2,8,32")
    assert (rank.name, rank.values, rank.method_setting) == ("rank", (2, 8, 32), True)
    lr = parse_axis("lora", "lr=1e-3, 3e-3")
    assert (lr.values, lr.method_setting) == ((1e-3, 3e-3), False)
    assert parse_axis("prompt", "prompt-length=4,16").name == "prompt_length"
    with pytest.raises(ConfigError, match="has no setting 'ranks'"):
        parse_axis("lora", "ranks=2")
    with pytest.raises(ConfigError, match="is not an integer"):
        parse_axis("lora", "rank=2.5")
    with pytest.raises(ConfigError, match="NAME=V1,V2"):
        parse_axis("lora", "rank")
    with pytest.raises(ConfigError, match="listed twice"):
        parse_axis("lora", "rank=2,2")


def test_a_grid_is_every_combination_and_lands_in_the_right_places() -> None:
    axes = [parse_axis("lora", "rank=2,8"), parse_axis("lora", "lr=1e-3,1e-2")]
    points = grid_points(axes)
    assert points == [
        {"rank": 2, "lr": 1e-3},
        {"rank": 2, "lr": 1e-2},
        {"rank": 8, "lr": 1e-3},
        {"rank": 8, "lr": 1e-2},
    ]
    base = {"method": "lora", "lr": "auto", "method_config": {"alpha": 32}}
    config = apply_point(base, axes, points[1])
    assert config["lr"] == 1e-2 and config["method_config"] == {"alpha": 32, "rank": 2}
    assert base["method_config"] == {"alpha": 32}  # the base is not changed
    assert point_text("lora", points[1]) == "r=2 lr=0.01"
    with pytest.raises(ConfigError, match="one or two settings"):
        grid_points([*axes, parse_axis("lora", "alpha=8,16")])
    with pytest.raises(ConfigError, match="at most 64"):
        grid_points(
            [
                parse_axis("lora", "rank=" + ",".join(map(str, range(1, 21)))),
                parse_axis("lora", "alpha=" + ",".join(map(str, range(1, 5)))),
            ]
        )


def test_search_ranges_come_from_the_metadata() -> None:
    assert search_range("lora", "rank") == {"name": "rank", "kind": "int", "low": 1, "high": 256, "log": True}
    assert search_range("lora", "targets")["choices"] == ["attention q,v", "all linear"]
    lr = search_range("lora", "lr")
    rates = registry.get("lora").lr_candidates
    assert lr["log"] and lr["low"] < min(rates) and lr["high"] > max(rates)  # around the candidates
    assert search_range("lora", "lr=1e-7:1e-1") == {
        "name": "lr", "kind": "float", "low": 1e-7, "high": 1e-1, "log": True,
    }  # fmt: skip
    assert search_range("lora", "rank=2:16")["low"] == 2
    with pytest.raises(ConfigError, match="no setting"):
        search_range("lora", "bottleneck")
    with pytest.raises(ConfigError, match="LOW < HIGH"):
        search_range("lora", "rank=16:2")
    with pytest.raises(ConfigError, match="LoRA rank must be between 1 and 256, got 1000"):
        search_range("lora", "rank=2:1000")


def test_pareto_flags() -> None:
    points = [
        {"accuracy": 0.90, "cost": 100},  # best accuracy: on the front
        {"accuracy": 0.85, "cost": 10},  # cheaper: on the front
        {"accuracy": 0.84, "cost": 50},  # worse and dearer than the second: dominated
        {"accuracy": 0.85, "cost": 10},  # a tie with the second: neither dominates the other
        {"accuracy": None, "cost": 1},  # failed or pruned: never on the front
    ]
    assert pareto_flags(points, {"accuracy": "max", "cost": "min"}) == [True, True, False, True, False]
    assert pareto_flags(points, {"accuracy": "max"}) == [True, False, False, False, False]
