"""Tables for people: job lists, the comparison table, config diffs, confusion matrices.

Pure functions of the API's dicts. Numbers are formatted here (percentages, sizes,
durations) so every tab shows them the same way.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from service.formatting import duration, size, with_interval
from ui.charts import run_label

# "Score": a run's primary metric, named in the cell where it is not accuracy
RUN_COLUMNS = ["ID", "Name", "Method", "Settings", "Status", "Progress", "ETA", "Score", "Where"]
NO_LEARNING = "⚠ did not learn"
COMPARE_COLUMNS = [
    "Run",
    "Method",
    "Settings",
    "Score [95% CI]",  # titled by the runs' primary metric when they share one (``score_title``)
    "vs best",
    "Macro-F1",
    "Learning rate",
    "Trainable params",
    "Trainable %",
    "Train time",
    "Peak memory",
    "Adapter size",
    "Quantization",
    "Status",
    "Note",
]


def number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def progress(job: dict[str, Any]) -> str:
    """Progress as a whole percentage ("100%" once succeeded)."""
    return f"{100 * (job.get('progress') or 0.0):.0f}%"


def eta(job: dict[str, Any]) -> str:
    """Time left for a running job; blank otherwise."""
    return duration(job.get("eta_seconds")) if job.get("status") == "running" else ""


def runs_table(jobs: list[dict[str, Any]]) -> pd.DataFrame:
    """The Runs tab's job list."""
    rows = [
        [
            j["id"],
            j["name"],
            j["method"],
            j.get("knobs") or "",
            j["status"],
            progress(j),
            eta(j),
            flagged(score_text(j), j.get("learning_flag")),
            j.get("where") or "",
        ]
        for j in jobs
    ]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def score_text(job: dict[str, Any]) -> str:
    """A run's accuracy, or for a task scored otherwise its score and the metric's name."""
    if job.get("accuracy") is not None or job.get("score") is None:
        return number(job.get("accuracy"))
    return f"{number(job['score'])} {job.get('primary_metric') or ''}".rstrip()


def scored_interval(row: dict[str, Any], interval: list[float] | None) -> str:
    """The accuracy with its interval, or for a task scored otherwise its score and metric."""
    if row.get("accuracy") is not None or row.get("score") is None:
        return with_interval(row.get("accuracy"), interval)
    return f"{with_interval(row['score'], interval)} {row.get('primary_metric') or ''}".rstrip()


def flagged(text: str, flag: str | None) -> str:
    """A cell with the "did not learn" mark when the run has that flag."""
    return f"{text} {NO_LEARNING}" if flag else text


def learning_rate(row: dict[str, Any]) -> str:
    """ "3e-03 (auto)" when the search chose it."""
    lr = row.get("lr")
    if lr is None:
        return "–"
    auto = " (auto)" if row.get("lr_auto") else ""
    return f"{lr:.0e}{auto}" + (" ⚠" if row.get("lr_choice_warning") else "")


def baseline_rows(compare: dict[str, Any]) -> list[list[str]]:
    """The trivial baseline's rows (one per task and evaluation set of the compared runs): the
    majority class, the training mean, every word 'O'."""
    baselines = compare.get("baselines") or []
    rows = []
    for b in baselines:
        runs = "" if len(baselines) == 1 else " for " + ", ".join(f"#{i}" for i in b["jobs"])
        name = "Majority class" if b.get("label_id") is not None else "Baseline"
        cells = [f"{name} (reference){runs}", "–", b.get("label") or "always the most frequent label"]
        score = b.get("score", b.get("accuracy"))
        cells += [scored_interval({**b, "score": score}, None), "–", number(b.get("macro_f1"))]
        rows.append(cells + ["–"] * (len(COMPARE_COLUMNS) - len(cells) - 1) + ["a run must beat this"])
    return rows


def compare_table(compare: dict[str, Any]) -> pd.DataFrame:
    """The side-by-side comparison table, one row per run, then the majority-class reference."""
    rows = []
    intervals, verdicts = significance_cells(compare)
    for r in compare.get("table", []):
        trainable = r.get("trainable_params")
        percent = r.get("trainable_percent")
        peak = r.get("peak_rss_mb")
        rows.append(
            [
                run_label(r["id"], r["name"]),
                r["method"],
                r.get("knobs") or "",
                scored_interval(r, r.get("score_ci") or intervals.get(r["id"])),
                verdicts.get(r["id"], "–"),
                with_interval(r.get("macro_f1"), r.get("macro_f1_ci")),
                learning_rate(r),
                "–" if trainable is None else f"{trainable:,}",
                "–" if percent is None else f"{percent:.2f}%",
                duration(r.get("train_seconds")),
                "–" if peak is None else f"{peak:,.0f} MB",
                size(r.get("adapter_bytes")),
                r.get("quant") or "none",
                r.get("status") or "",
                " ".join(filter(None, (r.get("learning_flag"), r.get("lr_choice_warning")))),
            ]
        )
    columns = [score_title(compare) if c == "Score [95% CI]" else c for c in COMPARE_COLUMNS]
    return pd.DataFrame(rows + baseline_rows(compare), columns=columns)


def score_title(compare: dict[str, Any]) -> str:
    """The score column's title: the compared runs' primary metric ("Accuracy [95% CI]",
    "Micro-F1 [95% CI]") when they share one, else "Score [95% CI]" (each cell names its own)."""
    metrics = {r.get("primary_metric") or "accuracy" for r in compare.get("table", [])}
    return f"{metric_title(metrics.pop())} [95% CI]" if len(metrics) == 1 else "Score [95% CI]"


def pooled_table(compare: dict[str, Any]) -> pd.DataFrame:
    """Compared runs that differ only in seed, one row per group: mean ± sd (n) of each metric
    its task reports (accuracy and macro-F1; Spearman, Pearson, ...; entity F1, ...); a metric
    another group's task lacks is "–"."""
    pooled = compare.get("pooled_seeds") or []
    metrics = list(dict.fromkeys(m for p in pooled for m in p.get("headline") or ("accuracy", "macro_f1")))
    rows = [
        [
            f"{p['name']} ({', '.join(f'#{i}' for i in p['jobs'])})",
            ", ".join(str(s) for s in p["seeds"]),
            *(mean_sd(p.get(m), p.get(f"{m}_sd"), p["n"]) for m in metrics),
        ]
        for p in pooled
    ]
    return pd.DataFrame(rows, columns=["Runs", "Seeds", *map(metric_title, metrics)])


# how people write these metrics' names; any other: its key with the first letter up
METRIC_TITLES = {
    "macro_f1": "Macro-F1",
    "rmse": "RMSE",
    "mae": "MAE",
    "entity_f1": "Entity F1",
    "micro_f1": "Micro-F1",
}


def metric_title(name: str) -> str:
    return METRIC_TITLES.get(name) or name.replace("_", " ").capitalize()


def mean_sd(mean: float | None, sd: float | None, n: int) -> str:
    if mean is None:
        return "–"
    return f"{mean:.3f} ± {sd:.3f} (n={n})" if sd is not None else f"{mean:.3f} (n={n})"


def significance_cells(compare: dict[str, Any]) -> tuple[dict[int, list[float]], dict[int, str]]:
    """Per job id: the accuracy interval computed at compare time (for runs that stored none)
    and the verdict against the best run ("best", "within noise (p = 0.41)", ...)."""
    result = compare.get("significance") or {}
    ids = {f"job {r['id']}": r["id"] for r in compare.get("table", [])}
    intervals = {ids[r["run"]]: r["score_ci"] for r in result.get("runs", []) if r["run"] in ids}
    verdicts = {ids[result["best"]]: "best"} if result.get("best") in ids else {}
    for pair in result.get("pairs", []):
        if pair["a"] in ids:
            verdicts[ids[pair["a"]]] = f"{pair['verdict']} (p = {p_text(pair['p_adjusted'])})"
    return intervals, verdicts


def p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def significance_caption(compare: dict[str, Any]) -> str:
    """One line under the table: how the verdicts were reached, or why there are none."""
    if compare.get("significance_note"):
        return str(compare["significance_note"])
    result = compare.get("significance")
    if not result:
        return ""
    several = len(result["pairs"]) > 1
    correction = "Holm-corrected over the comparisons with the best" if several else "of one comparison"
    tests = sorted({p["test"] for p in result["pairs"]}) or ["no"]
    test = "McNemar's exact" if tests == ["McNemar exact"] else " / ".join(tests)
    return (
        f"{result['metric'].replace('_', ' ').capitalize()} with its 95% bootstrap interval over the "
        f"{result['eval_rows']:,} evaluation examples (sentences, for a tag per word). 'vs best': each run "
        f"against the best one on the same examples, {test} test, p-values {correction}; 'within noise' "
        "means this evaluation set cannot tell them apart."
    )


def config_diff(compare: dict[str, Any]) -> pd.DataFrame:
    """Only the settings that differ: one row per field, one column per run."""
    runs = {str(r["id"]): run_label(r["id"], r["name"]) for r in compare.get("table", [])}
    columns = ["Setting", *runs.values()]
    rows = []
    for entry in compare.get("config_diff", []):
        values = {str(k): v for k, v in entry["values"].items()}
        rows.append([entry["field"], *("–" if values.get(i) is None else str(values[i]) for i in runs)])
    return pd.DataFrame(rows, columns=columns)


def predictions_table(results: list[dict[str, Any]]) -> pd.DataFrame:
    """Try it: each run's prediction for the one text, drawn by the renderer of its task's view
    kind (``VIEWS``): a label and its confidence, a number, a sentence with its predicted
    entities (``ui.tagged``). Runs of several kinds share the columns of the first kind."""
    shown = [r for r in results if r.get("predictions")]
    kinds = [r.get("view") or "label" for r in shown]
    columns = VIEWS[kinds[0]][0] if kinds else VIEWS["label"][0]
    rows = [
        [run_label(r["id"], r["name"]), *VIEWS[k][1](r["predictions"][0])]
        for r, k in zip(shown, kinds, strict=True)
    ]
    return pd.DataFrame(rows, columns=columns)


def _label_cells(item: dict[str, Any]) -> list[Any]:
    probability = item.get("probability")
    return [item["label"], "–" if probability is None else f"{100 * probability:.1f}%"]


def _tagged_cells(item: dict[str, Any]) -> list[Any]:
    from ui.tagged import sentence_html

    return [sentence_html(item), item["label"]]


def _label_set_cells(item: dict[str, Any]) -> list[Any]:
    """A set of labels: the chosen ones, then every label with its probability, the chosen marked
    (``labels``: [{name, probability, chosen}], the most probable first)."""
    shown = []
    for entry in sorted(item.get("labels") or [], key=lambda e: -float(e["probability"])):
        text = f"{html.escape(str(entry['name']))} {100 * float(entry['probability']):.1f}%"
        shown.append(f'<b class="wb-chosen">✓ {text}</b>' if entry["chosen"] else f"<span>{text}</span>")
    return [item["label"] or "(no label)", Html(" · ".join(shown))]


# a task's view kind -> Try it's columns and one prediction's cells after the run's name
VIEWS: dict[str, tuple[list[str], Callable[[dict[str, Any]], list[Any]]]] = {
    "label": (["Run", "Prediction", "Confidence"], _label_cells),
    "score": (["Run", "Prediction", "Confidence"], _label_cells),  # a number, no confidence: "–"
    "tags": (["Run", "Prediction", "Entities"], _tagged_cells),
    "labels": (["Run", "Prediction", "Every label"], _label_set_cells),  # a set of labels per text
}


def _matrix_html(title: str, labels: list[str], matrix: list[list[int]]) -> str:
    """One confusion matrix as a small HTML table, cells shaded by their row share."""
    head = "".join(f"<th>{html.escape(str(label))}</th>" for label in labels)
    body = []
    for label, row in zip(labels, matrix, strict=True):
        total = sum(row) or 1
        cells = "".join(
            f'<td style="background: rgba(59,130,246,{0.08 + 0.72 * n / total:.2f})">{n}</td>' for n in row
        )
        body.append(f"<tr><th>{html.escape(str(label))}</th>{cells}</tr>")
    return (
        f'<div class="wb-confusion"><div class="wb-confusion-title">{html.escape(title)}</div>'
        f"<table><tr><th>true ↓ · predicted →</th>{head}</tr>{''.join(body)}</table></div>"
    )


def confusion_html(compare: dict[str, Any]) -> str:
    """Every run's confusion matrix, side by side (rows: true label, columns: predicted)."""
    runs = {str(r["id"]): run_label(r["id"], r["name"]) for r in compare.get("table", [])}
    parts = [
        _matrix_html(runs.get(str(job_id), f"#{job_id}"), cm["labels"], cm["matrix"])
        for job_id, cm in (compare.get("confusion") or {}).items()
        if cm
    ]
    if not parts:
        return "<p>No confusion matrices: only finished runs of a label per text have one.</p>"
    return f'<div class="wb-confusions">{"".join(parts)}</div>'


@dataclass(frozen=True)
class Html:
    """A cell already rendered as HTML (its text escaped where it was made): ``to_html`` keeps
    it. Not a ``str`` subclass: pandas would store that as a plain string."""

    markup: str

    def __str__(self) -> str:
        return self.markup


def to_html(
    frame: pd.DataFrame,
    *,
    caption: str = "",
    keys: list[Any] | None = None,
    selected: Any = None,
    empty: str = "Nothing yet.",
) -> str:
    """``frame`` as a plain HTML table (every cell escaped).

    Used instead of ``gr.Dataframe``, whose virtual scrolling keeps the height it had
    when first shown: rows added later (new jobs, more compared runs) end up hidden
    below a scroll bar. ``keys`` tags each row (``data-key``) so a click can select it;
    the row whose key is ``selected`` is highlighted.
    """
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for i, values in enumerate(frame.itertuples(index=False)):
        key = keys[i] if keys is not None else None
        attrs = "" if key is None else f' data-key="{html.escape(str(key))}"'
        if key is not None and key == selected:
            attrs += ' class="wb-selected" aria-selected="true"'
        cells = "".join(
            f"<td>{v if isinstance(v, Html) else html.escape('' if v is None else str(v))}</td>"
            for v in values
        )
        rows.append(f"<tr{attrs}>{cells}</tr>")
    title = f'<div class="wb-caption">{html.escape(caption)}</div>' if caption else ""
    body = "".join(rows) or f'<tr><td colspan="{max(1, len(frame.columns))}">{html.escape(empty)}</td></tr>'
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'{title}<div class="wb-table">{table}</div>'


def caption_html(text: str) -> str:
    """A line of explanation under a table (escaped; empty text, nothing)."""
    return f'<p class="wb-caption" id="compare-significance">{html.escape(text)}</p>' if text else ""


def throughput_text(metrics: dict[str, Any], series: dict[str, Any]) -> str:
    """Tokens/s and model FLOPs utilisation: the run's own figures once it ended, the latest
    step's tokens/s while it runs."""
    per_second = metrics.get("tokens_per_second")
    if per_second is None:
        live = series.get("tokens_per_second") or []
        return f"Throughput: {live[-1][1]:,.0f} tokens/s (last step)" if live else ""
    parts = [f"Throughput: {per_second:,.0f} tokens/s"]
    if metrics.get("padding_share") is not None:
        parts.append(f"{metrics['padding_share']:.0%} of the batch tokens were padding")
    if metrics.get("mfu") is not None and metrics.get("peak_tflops"):
        parts.append(
            f"model FLOPs utilisation {metrics['mfu']:.0%} of this device's measured peak "
            f"({metrics['peak_tflops']:g} TFLOP/s, {metrics.get('precision', 'fp32')})"
        )
    return " · ".join(parts)
