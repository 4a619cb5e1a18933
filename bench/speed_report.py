"""bench/SPEED.md from bench/speed.py's runs: the tables and the targets worked out from them."""

from __future__ import annotations

import argparse
import platform
import statistics
from typing import Any

from bench.methods import METHODS

SHORT_ROWS = 128  # bf16 alone on a CPU that emulates it (~20x slower here): a short run gives the ratio
SPEED_TARGET, ACCURACY_POINTS, TOP_SHARE = 2.5, 1.0, 1 / 3


def cost(run: dict[str, Any]) -> float:
    """What a method's speed is judged on: s/epoch; for the probe, its whole training time.

    A probe's epochs train a head on cached features in milliseconds: its cost is the encoder
    pass that computes the features (training rows, then dev rows), so that is what is timed.
    """
    return run["train_seconds"] if run["method"] == "probe" else run["seconds_per_epoch"]


def mean_sd(values: list[float], digits: int = 3) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def pick(results: list[dict[str, Any]], method: str, setting: str, rows: int) -> list[dict[str, Any]]:
    return [r for r in results if r["method"] == method and r["setting"] == setting and r["rows"] == rows]


def render(results: list[dict[str, Any]], args: argparse.Namespace, native: bool) -> str:
    lines = [
        "# Speed: the old loop against the new defaults",
        "",
        f"`python bench/speed.py --rows {args.rows} --epochs {args.epochs} --seeds {args.seeds}` on "
        f"{platform.processor() or platform.machine()} ({_cpu_line()}); one process per run, all on this "
        "machine (one invocation per --only set). Protocol of ../shared/BASELINE.md: SST-2, the first "
        f"{args.rows} rows of its seeded shuffle, all 872 dev rows, batch 32, max length 128, each "
        "method's fixed learning rate, every epoch trained (no early stopping). *old* = random "
        "batches in fp32 with the plain kernels (torch's dropout, per-tensor AdamW, transformers' "
        "default attention); *new* = the defaults (length-grouped batches, fused AdamW, the CPU "
        "dropout from random bits with eager attention so that it covers attention probabilities, "
        "precision auto"
        + ("" if native else ", which is fp32 on this CPU: it has no native bf16")
        + "). s/epoch is training time per epoch (evaluation excluded); accuracy on the dev set; "
        "where several seeds ran, mean ± standard deviation. Length-grouped training batches come "
        "in mega-batches of 4 batches (backend/data/batching.py; from c21db16); the earlier runs "
        "with transformers' 15 are in git history, one-off runs in bench/speed_mega_batch_runs.md. "
        "A method with more seeds than --seeds ran them in an invocation of its own "
        "(`--seeds 0,...,N --only M --all-seeds M`), old and new alike; each row's commit is in "
        "bench/speed_runs.jsonl.",
        "",
        "| method | old s/epoch | new s/epoch | speed-up | old accuracy | new accuracy "
        "| tokens/s new | padding old → new | MFU new | seeds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in METHODS:
        old, new = pick(results, method, "old", args.rows), pick(results, method, "new", args.rows)
        if not old or not new:
            continue
        so, sn = statistics.mean(cost(r) for r in old), statistics.mean(cost(r) for r in new)
        pad = (
            f"{_mean(old, 'padding_share'):.0%} → {_mean(new, 'padding_share'):.0%}"
            if new[0].get("padding_share") is not None
            else "–"
        )
        tps = f"{_mean(new, 'tokens_per_second'):,.0f}" if new[0].get("tokens_per_second") else "–"
        mfu = f"{_mean(new, 'mfu'):.0%}" if new[0].get("mfu") is not None else "–"
        lines.append(
            f"| {method} | {so:.2f} | {sn:.2f} | **{so / sn:.2f}x** "
            f"| {mean_sd([r['accuracy'] for r in old])} | {mean_sd([r['accuracy'] for r in new])} "
            f"| {tps} | {pad} | {mfu} | {len(new)} |"
        )
    if pick(results, "probe", "new", args.rows):
        lines += [
            "",
            "The probe's figures are its whole training time in seconds, not s/epoch: its epochs "
            "train a head on cached features in milliseconds, and its cost is the encoder pass that "
            "computes them (no feature cache between runs here). *old*: rows in file order, fp32; "
            "*new*: length-sorted, training rows in bf16 autocast, dev rows in fp32 (as the exported "
            "probe computes them).",
        ]
    lines += _bf16_section(results, args, native)
    lines += _top_section(results, args) + _prediction_section(results, args)
    lines += _targets(results, args)
    return "\n".join(lines) + "\n"


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.mean(r[key] for r in rows if r.get(key) is not None)


def _cpu_line() -> str:
    import os

    from backend.training.runtime import precision_line

    return f"{os.cpu_count()} cores; precision auto = {precision_line('cpu')}"


def _section(title: str, note: str, header: str) -> list[str]:
    """A titled table's opening lines; the first column is text, the others right-aligned."""
    return ["", f"## {title}", "", note, "", header, "|---" + "|---:" * (header.count("|") - 2) + "|"]


def _alone_section(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """On a CPU with native bf16: each half of *new* measured alone against *old*."""
    lines = _section(
        "Length grouping alone and bf16 alone",
        "Seed 0, the same rows and epochs, the plain kernels. Speed-ups are against *old* (random "
        "batches, fp32); *new* also has fused AdamW and the CPU dropout from random bits.",
        "| method | old s/epoch | grouping alone (fp32) | bf16 alone (random batches) | both (*new*) "
        "| accuracy: grouping alone / bf16 alone |",
    )
    for method in METHODS:
        got = {s: pick(results, method, s, args.rows) for s in ("old", "grouped_fp32", "bf16_alone", "new")}
        got = {s: [r for r in rs if r["seed"] == 0] for s, rs in got.items()}
        if not (got["old"] and got["new"]):
            continue
        # A half not measured in this sitting shows as "–" (its speed-up would mix sittings).
        t = {s: cost(rs[0]) for s, rs in got.items() if rs}
        cells = [
            f"{t[s]:.2f} ({t['old'] / t[s]:.2f}x)" if s in t else "–"
            for s in ("grouped_fp32", "bf16_alone", "new")
        ]
        acc = [f"{got[s][0]['accuracy']:.3f}" if got[s] else "–" for s in ("grouped_fp32", "bf16_alone")]
        lines.append(f"| {method} | {t['old']:.2f} | {' | '.join(cells)} | {' / '.join(acc)} |")
    return lines


def _bf16_section(results: list[dict[str, Any]], args: argparse.Namespace, native: bool) -> list[str]:
    if native:
        return _alone_section(results, args)
    rows = SHORT_ROWS
    lines = ["", "## Length grouping alone and bf16 alone", ""]
    if not native:
        lines.append(
            f"This CPU has no native bf16, so *new* above is length grouping alone. bf16 autocast "
            f"(random batches) against fp32 (random batches) on a short run ({rows} rows, 1 epoch):"
        )
    lines += [
        "",
        "| method | fp32 s/epoch | bf16 s/epoch | bf16 speed-up | fp32 acc | bf16 acc |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for method in METHODS:
        fp32 = pick(results, method, "old", rows)
        bf16 = pick(results, method, "bf16_alone", rows)
        if fp32 and bf16:
            a, b = cost(fp32[0]), cost(bf16[0])
            lines.append(
                f"| {method} | {a:.2f} | {b:.2f} | {a / b:.2f}x "
                f"| {fp32[0]['accuracy']:.3f} | {bf16[0]['accuracy']:.3f} |"
            )
    return lines


def _top_section(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    pairs = {m: p for m in ("lora", "adapter") if (p := _top_pair(results, m, args.rows)) is not None}
    commits = "; ".join(f"{m} at {top.get('commit', '?')}" for m, (_, top) in pairs.items())
    lines = _section(
        "Top 2 of 6 layers over cached lower layers",
        "Epoch 1 includes building the cache (one no-gradient pass over the training and dev rows). "
        f"Each top-2 run follows its all-layers run in one sitting ({commits}).",
        "| method | layers | epoch 1 s | later epochs s (mean) | later / all-layers | accuracy | trainable |",
    )
    for method, (full, top) in pairs.items():
        f_later = _later(full)
        for name, r in (("all 6", full), ("top 2", top)):
            lines.append(
                f"| {method} | {name} | {r['epoch_seconds'][0]:.2f} | {_later(r):.2f} "
                f"| {_later(r) / f_later:.3f} | {r['accuracy']:.3f} | {r['trainable_params']:,} |"
            )
    return lines


def _prediction_section(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    measured = [r for r in pick(results, "lora", "old", args.rows) + pick(results, "lora", "new", args.rows)]
    measured = [r for r in measured if r.get("prediction")]
    if not measured:
        return []
    p = measured[-1]["prediction"]
    each = "; ".join(
        f"after the {r['setting']} run: {r['prediction']['sorted_rows_per_s']:.0f} vs "
        f"{r['prediction']['plain_rows_per_s']:.0f} rows/s"
        for r in measured
    )
    return [
        "",
        "## Prediction",
        "",
        f"Measured {len(measured)} times ({each}).",
        "",
        "The exported LoRA run predicting the 872 dev rows (batch 64): "
        f"**{p['sorted_rows_per_s']:.0f} rows/s** with "
        f"length-sorted batches (the Predictor) against {p['plain_rows_per_s']:.0f} rows/s in plain batches "
        f"({p['sorted_rows_per_s'] / p['plain_rows_per_s']:.2f}x).",
    ]


def _targets(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    """Issue 10's targets, worked out from the rows above (met or missed, never assumed)."""
    lines = ["", "## Targets", ""]
    for method in METHODS:
        old, new = pick(results, method, "old", args.rows), pick(results, method, "new", args.rows)
        if not old or not new:
            continue
        speed = statistics.mean(cost(r) for r in old) / statistics.mean(cost(r) for r in new)
        points = 100 * (_mean(new, "accuracy") - _mean(old, "accuracy"))
        ok = speed >= SPEED_TARGET and points >= -ACCURACY_POINTS
        lines.append(
            f"- {method}: {speed:.2f}x (target ≥ {SPEED_TARGET}x), accuracy {points:+.1f} points "
            f"(target ≥ −{ACCURACY_POINTS:.0f}; {len(new)} seed(s)): **{'met' if ok else 'missed'}**"
            + _paired(old, new)
        )
    for method in ("lora", "adapter"):
        if pair := _top_pair(results, method, args.rows):
            share = _later(pair[1]) / _later(pair[0])
            lines.append(
                f"- {method}, top 2 of 6 layers from epoch 2 on: {share:.3f} of the all-layer time "
                f"(target ≤ {TOP_SHARE:.3f}): **{'met' if share <= TOP_SHARE else 'missed'}**"
            )
    return lines if len(lines) > 3 else []


def _paired(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> str:
    """Seed by seed, for 3+ seeds run both ways: a mean can hang on one run that collapsed."""
    by_seed = {r["seed"]: r["accuracy"] for r in old}
    gaps = [100 * (r["accuracy"] - by_seed[r["seed"]]) for r in new if r["seed"] in by_seed]
    if len(gaps) < 3:
        return ""
    ahead = sum(gap >= 0 for gap in gaps)
    return (
        f"; seed by seed: median {statistics.median(gaps):+.1f} points, new at or above old on "
        f"{ahead} of {len(gaps)}, gaps {min(gaps):+.1f} to {max(gaps):+.1f}"
    )


def _top_pair(
    results: list[dict[str, Any]], method: str, rows: int
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The all-layers and the top-2 run of one sitting (runs before "top2_all": *new*, seed 0)."""
    full = pick(results, method, "top2_all", rows)
    full = full or [r for r in pick(results, method, "new", rows) if r["seed"] == 0]
    top = pick(results, method, "top2", rows)
    return (full[0], top[0]) if full and top else None


def _later(row: dict[str, Any]) -> float:
    return statistics.mean(row["epoch_seconds"][1:] or row["epoch_seconds"])
