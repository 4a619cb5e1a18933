"""A shareable report: one self-contained HTML file for compared runs or for a sweep.

Built from the API's own records (``Workbench.compare`` for the table, curves and matrices,
``get_job`` for each run's full config and dataset, ``get_sweep`` for the Pareto flags), so
the file says what the app shows. The caller redacts those records first when the reader
may not see server details (``Workbench.report(redact=...)``); the stored copies' paths in
a config (``data``, ``eval_data``) are cut to file names here in every case, because off
the server they name nothing. Charts are inline SVG (``service.svg_charts``); every text
is escaped (``service.report_html``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import PurePath
from typing import Any

from service.formatting import duration, size, with_interval
from service.report_html import (
    DASH,
    cell,
    count,
    document,
    learning_rate,
    number,
    section,
    table,
)
from service.svg_charts import COSTS, bars_svg, curves_svg, pareto_svg

RUN_HEADERS = (
    "Run", "Dataset", "Method", "Settings", "Score [95% CI]", "Macro-F1 [95% CI]", "Learning rate",
    "Trainable params", "Train time", "Adapter size", "Quantization", "Status", "Note",
)  # fmt: skip
NUMERIC = (4, 5, 6, 7, 8, 9)
PATH_KEYS = ("data", "eval_data")  # TrainConfig fields holding the server's stored copies


def _by_id(mapping: Mapping[Any, Any] | None, job_id: int) -> Any:
    """A value of a dict keyed by job id: ints from the API, strings once through JSON."""
    mapping = mapping or {}
    return mapping.get(job_id, mapping.get(str(job_id)))


def run_label(row: Mapping[str, Any]) -> str:
    return f"#{row['id']} {row['name']}"


def _run_row(row: Mapping[str, Any], job: Mapping[str, Any], best_id: int | None) -> tuple[list[str], str]:
    note = "★ best run of the sweep" if row["id"] == best_id else ""
    if row.get("learning_flag"):
        note = f"⚠ did not learn: {row['learning_flag']}"
    elif job.get("error"):
        note = str(job["error"])
    elif row.get("lr_choice_warning"):
        note = f"⚠ {row['lr_choice_warning']}"
    cells = [
        run_label(row), job.get("dataset") or DASH, row["method"], row.get("knobs") or "",
        _score(row),
        with_interval(row.get("macro_f1"), row.get("macro_f1_ci")),
        learning_rate(row.get("lr"), bool(row.get("lr_auto"))),
        count(row.get("trainable_params"), row.get("trainable_percent")),
        duration(row.get("train_seconds")), size(row.get("adapter_bytes")),
        row.get("quant") or DASH, row["status"], note,
    ]  # fmt: skip
    return cells, "best" if row["id"] == best_id else ""


def _score(row: Mapping[str, Any]) -> str:
    """The run's primary metric with its interval, named ("0.812 [0.78, 0.84] accuracy")."""
    score = row.get("score") if row.get("score") is not None else row.get("accuracy")
    metric = row.get("primary_metric") or "accuracy"
    shown = with_interval(score, row.get("score_ci"))
    return shown if shown == DASH else f"{shown} {metric}"


def runs_table(compare: Mapping[str, Any], jobs: Mapping[int, Any], best_id: int | None = None) -> str:
    """The runs side by side, then the trivial baseline of each task and evaluation set."""
    rows = [_run_row(r, jobs.get(r["id"], {}), best_id) for r in compare["table"]]
    baselines = compare.get("baselines") or []
    for b in baselines:
        which = "" if len(baselines) == 1 else " for " + ", ".join(f"#{i}" for i in b["jobs"])
        name = "Majority class" if b.get("label_id") is not None else "Baseline"
        cells = [f"{name} (reference){which}", DASH, DASH, b.get("label") or "always the most frequent label"]
        cells += [_score({**b, "score": b.get("score", b.get("accuracy"))}), number(b.get("macro_f1"))]
        rows.append(([*cells, *[DASH] * 6, "a run must beat this"], "reference"))
    return table(RUN_HEADERS, rows, caption="Runs side by side", numeric=NUMERIC)


def accuracy_chart(compare: Mapping[str, Any]) -> str:
    """Each run's score (its task's primary metric: accuracy for classification) as a bar; the
    majority class as a dashed line when there is one set."""
    baselines = compare.get("baselines") or []
    reference = baselines[0].get("score", baselines[0].get("accuracy")) if len(baselines) == 1 else None
    bars = [(run_label(r), r.get("score") if r.get("score") is not None else r.get("accuracy"))
            for r in compare["table"]]  # fmt: skip
    metrics = sorted({r.get("primary_metric") or "accuracy" for r in compare["table"]})
    label = baselines[0].get("label") if reference is not None else None
    return bars_svg(
        bars, reference=reference, reference_label=f"baseline: {label}" if label else "majority class",
        title=f"{' / '.join(metrics)} on the evaluation set",
    )  # fmt: skip


def _curves(compare: Mapping[str, Any], name: str) -> list[tuple[str, list[list[float]]]]:
    series = compare.get("series")
    return [(run_label(r), (_by_id(series, r["id"]) or {}).get(name) or []) for r in compare["table"]]


def loss_charts(compare: Mapping[str, Any]) -> str:
    """Training loss per step; per epoch as well when some run recorded its loss per epoch
    only, so that no run with a loss curve goes undrawn."""
    by_step = _curves(compare, "train_loss")
    parts = [curves_svg(by_step, x_title="step", y_title="training loss")]
    by_epoch = _curves(compare, "epoch_train_loss")
    if any(epoch and not step for (_, step), (_, epoch) in zip(by_step, by_epoch, strict=True)):
        parts.append(curves_svg(by_epoch, x_title="epoch", y_title="training loss"))
    return "".join(parts) or '<p class="meta">No run recorded a training-loss curve.</p>'


def per_class_table(compare: Mapping[str, Any]) -> str:
    """F1 of every label (rows) for every run (columns)."""
    scores = {r["id"]: _by_id(compare.get("per_class_f1"), r["id"]) or {} for r in compare["table"]}
    labels = list(dict.fromkeys(label for f1 in scores.values() for label in f1))
    if not labels:
        return '<p class="meta">No run has per-class results yet.</p>'
    headers = ["Label", *(run_label(r) for r in compare["table"])]
    rows = [([label, *(number(scores[i].get(label)) for i in scores)], "") for label in labels]
    return table(headers, rows, caption="F1 per class", numeric=range(1, len(headers)))


def confusion_tables(compare: Mapping[str, Any]) -> str:
    """One small matrix per run (rows: true label, columns: predicted)."""
    parts = []
    for row in compare["table"]:
        matrix = _by_id(compare.get("confusion"), row["id"])
        if not matrix:
            parts.append(
                f'<p class="meta">{cell(run_label(row))}: no confusion matrix (none yet, or a task '
                "without one: a score, a tag per word).</p>"
            )
            continue
        labels = matrix["labels"]
        pairs = zip(labels, matrix["matrix"], strict=False)
        rows = [([label, *map(str, counts)], "") for label, counts in pairs]
        headers = ["true \\ predicted", *labels]
        parts.append(table(headers, rows, caption=run_label(row), numeric=range(1, len(headers))))
    return f'<div class="matrices">{"".join(parts)}</div>'


def config_diff_table(compare: Mapping[str, Any]) -> str:
    diff = compare.get("config_diff") or []
    if not diff:
        return '<p class="meta">The runs\' settings are identical.</p>'
    ids = [r["id"] for r in compare["table"]]
    headers = ["Setting", *(f"#{i}" for i in ids)]
    rows = [([d["field"], *(_json_cell(_by_id(d["values"], i)) for i in ids)], "") for d in diff]
    return table(headers, rows, caption="Settings that differ between the runs")


def _json_cell(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else value


def shareable_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """A run's config with the stored data files named by file name only."""
    out = dict(config or {})
    for key in PATH_KEYS:
        if isinstance(out.get(key), str):
            out[key] = PurePath(out[key]).name
    return out


def configs(compare: Mapping[str, Any], jobs: Mapping[int, Any]) -> str:
    """Every run's full config as pretty JSON, folded."""
    parts = []
    for row in compare["table"]:
        config = shareable_config((jobs.get(row["id"]) or {}).get("config"))
        text = json.dumps(config, indent=2, sort_keys=True, default=str)
        parts.append(f"<details><summary>{cell(run_label(row))}</summary><pre>{cell(text)}</pre></details>")
    return "".join(parts)


def _run_sections(compare: Mapping[str, Any], jobs: Mapping[int, Any], best_id: int | None) -> list[str]:
    if not compare["table"]:
        return [section("Runs", '<p class="meta">No runs yet.</p>')]
    return [
        section("Runs", runs_table(compare, jobs, best_id)),
        section("Score", accuracy_chart(compare)),
        section("Training loss", loss_charts(compare)),
        section("Per-class F1 (per entity type for a tag per word)", per_class_table(compare)),
        section("Confusion matrices", confusion_tables(compare), "Rows: true label; columns: predicted."),
        section("Configuration differences", config_diff_table(compare)),
        section("Full configurations", configs(compare, jobs)),
    ]


def _meta(compare: Mapping[str, Any], jobs: Mapping[int, Any], generated: datetime | None) -> str:
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()
    datasets = sorted({str(j.get("dataset")) for j in jobs.values() if j.get("dataset")})
    on = f" · dataset{'s' if len(datasets) > 1 else ''}: {', '.join(datasets)}" if datasets else ""
    return f"Generated {when} by the adaptation workbench · {len(compare['table'])} runs{on}"


def comparison_report(
    compare: Mapping[str, Any], jobs: list[Mapping[str, Any]], *, generated: datetime | None = None
) -> str:
    """The report of compared runs: ``compare`` is ``Workbench.compare(ids)``, ``jobs`` the
    ``get_job`` details of the same runs (their configs and dataset names)."""
    by_id = {int(j["id"]): j for j in jobs}
    title = "Comparison of runs " + ", ".join(f"#{r['id']}" for r in compare["table"])
    return document(title, _meta(compare, by_id, generated), _run_sections(compare, by_id, None))


def sweep_summary(sweep: Mapping[str, Any]) -> str:
    """What the sweep was: kind, status, objective, counts, best run, its search space."""
    best = next((t for t in sweep["trials"] if t["job_id"] == sweep.get("best_job_id")), None)
    rows = [
        (["Kind", sweep.get("kind")], ""),
        (["Status", sweep.get("status")], ""),
        (["Objective", sweep.get("objective")], ""),
        (["Trials", f"{sweep.get('trials_done')} finished of {sweep.get('trials_planned')} planned"], ""),
        (["Pruned", str(sweep.get("pruned", 0))], ""),
        (["Best run", f"#{best['job_id']} {best['name']}" if best else DASH], ""),
    ]
    spec = json.dumps(sweep.get("spec") or {}, indent=2, sort_keys=True, default=str)
    spec_html = f"<details><summary>Sweep settings</summary><pre>{cell(spec)}</pre></details>"
    return table((), rows, caption="The sweep") + spec_html


def pareto_charts(sweep: Mapping[str, Any]) -> str:
    """The front against each cost, without the page's click behaviour."""
    objective, best = sweep.get("objective", "accuracy"), sweep.get("best_job_id")
    return "".join(
        f"<h3>{cell(title)}</h3>" + pareto_svg(sweep["points"], cost, objective, best, clickable=False)
        for cost, (title, _) in COSTS.items()
    )


def sweep_report(
    sweep: Mapping[str, Any],
    compare: Mapping[str, Any],
    jobs: list[Mapping[str, Any]],
    *,
    generated: datetime | None = None,
) -> str:
    """The report of a sweep: ``sweep`` is ``Workbench.get_sweep(id)``; ``compare`` and
    ``jobs`` are as for :func:`comparison_report`, over the sweep's trials."""
    by_id = {int(j["id"]): j for j in jobs}
    title = f"Sweep #{sweep['id']}: {sweep['name']}"
    parts = [
        section("Sweep", sweep_summary(sweep)),
        section("Pareto front", pareto_charts(sweep), "Objective up, cost down; dashed: the front."),
        *_run_sections(compare, by_id, sweep.get("best_job_id")),
    ]
    return document(title, _meta(compare, by_id, generated), parts)
