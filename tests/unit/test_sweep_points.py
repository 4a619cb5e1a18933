"""A sweep with a seed axis: runs that differ only in seed are one Pareto point at their mean,
with the spread, and the best point is the best mean, not the luckiest seed."""

from __future__ import annotations

import statistics
import xml.etree.ElementTree as ET
from typing import Any

from jobs.schema import Job, Sweep
from jobs.sweep_views import sweep_detail
from service.svg_charts import pareto_svg

SVG = "{http://www.w3.org/2000/svg}"


def job(job_id: int, rank: int, seed: int, accuracy: float | None, params: int) -> Job:
    status = "succeeded" if accuracy is not None else "pruned"
    summary = {"score_ci": [accuracy - 0.03, accuracy + 0.03]} if accuracy is not None else {}
    config = {"method_config": {"rank": rank}, "lr": 1e-3, "seed": seed}
    return Job(
        id=job_id, name=f"lora r={rank} seed={seed}", status=status, method="lora", model="m",
        config=config, dataset_id=1, eval_dataset_id=None, trial_params={"rank": rank, "seed": seed},
        accuracy=accuracy, macro_f1=accuracy, trainable_params=params, train_seconds=10.0 * rank,
        adapter_bytes=4 * params, summary=summary,
    )  # fmt: skip


def sweep() -> Sweep:
    spec: dict[str, Any] = {"grid": ["rank=2,8", "seed=0,1,2"], "objective": "accuracy"}
    return Sweep(id=1, name="s", kind="grid", method="lora", spec=spec, base_config={}, status="finished")


def test_seeds_pool_into_one_point_at_the_mean_and_the_best_mean_wins() -> None:
    # rank 8 has the single best seed (0.90) but the worse mean; rank 2 wins on the mean
    jobs = [
        job(1, 2, 0, 0.84, 1_000), job(2, 2, 1, 0.85, 1_000), job(3, 2, 2, 0.86, 1_000),
        job(4, 8, 0, 0.90, 4_000), job(5, 8, 1, 0.76, 4_000), job(6, 8, 2, 0.77, 4_000),
        job(7, 8, 3, None, 4_000),  # pruned: in no point
    ]  # fmt: skip
    detail = sweep_detail(sweep(), jobs)
    points = {tuple(p["job_ids"]): p for p in detail["points"]}
    assert set(points) == {(1, 2, 3), (4, 5, 6)}
    small, big = points[(1, 2, 3)], points[(4, 5, 6)]
    assert small["n"] == big["n"] == 3 and "seed" not in small["params"]
    assert abs(big["accuracy"] - statistics.mean([0.90, 0.76, 0.77])) < 1e-12
    assert abs(big["spread"] - statistics.stdev([0.90, 0.76, 0.77])) < 1e-12
    assert big["score_ci"] == [big["accuracy"] - big["spread"], big["accuracy"] + big["spread"]]
    assert detail["best_job_id"] == 3  # the best mean's best seed, not job 4
    # rank 2 is cheaper and better on the mean: it dominates rank 8 on every cost
    assert small["pareto"] and not big["pareto"]
    flags = {t["job_id"]: t["pareto"] for t in detail["trials"]}
    assert flags == {1: True, 2: True, 3: True, 4: False, 5: False, 6: False, 7: False}

    page = pareto_svg(detail["points"], "trainable_params", "accuracy", detail["best_job_id"])
    svg = ET.fromstring(page[: page.index("</svg>") + len("</svg>")])
    circles = {c.get("data-key"): c for c in svg.iter(f"{SVG}circle")}
    assert set(circles) == {"3", "4"}  # one point per seed group, opening its best seed's run
    spreads = [x for x in svg.iter(f"{SVG}line") if x.get("class") == "wb-spread-bar"]
    assert len(spreads) == 2 and "over 3 seeds" in page


def test_without_a_seed_axis_every_trial_is_its_own_point() -> None:
    jobs = [job(1, 2, 0, 0.80, 1_000), job(2, 8, 0, 0.85, 4_000)]
    detail = sweep_detail(sweep(), jobs)
    assert [p["job_ids"] for p in detail["points"]] == [[1], [2]]
    assert [p["accuracy"] for p in detail["points"]] == [0.80, 0.85]
    assert detail["points"][0]["score_ci"] == [0.80 - 0.03, 0.80 + 0.03]  # the run's own interval
    assert detail["best_job_id"] == 2 and all(t["pareto"] for t in detail["trials"])
