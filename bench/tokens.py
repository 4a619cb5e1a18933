"""Benchmark (issue 38): token classification, every method at its defaults.

    .venv/bin/python bench/tokens.py [--only lora,full] [--seeds 0] [--rows 1000] [--report]

WNUT-17 (emerging entities, ../shared/data/wnut17): each method trains on ``--rows`` sentences
of train.jsonl with nothing set but the method (task auto, learning rate and epochs auto, max
length 128, batch 32) and is scored on test.jsonl (the split the published figures use):
entity F1 (seqeval, strict IOB2; primary) with its 95% interval over sentences, precision,
recall, macro F1 and word accuracy. Beside them: the baseline (every word "O") and the layer
sweep of a per-word linear probe, for WNUT-17 and for UD English-EWT part of speech (word
accuracy), drawn next to the sentence-level (STS-B) probe curve of bench/SCORES.md. And the
speed check: LoRA's seconds per epoch on the same sentences as token classification and as
text classification (a label per sentence: does it name an entity), one after the other.
Runs are appended to bench/tokens_runs.jsonl (a rerun skips those there); bench/TOKENS.md is
written from that file (bench/TASKS.md includes it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.runs_file import Bench, bench_main, fmt, read_runs  # noqa: E402
from bench.tasks import COMMIT, METHODS, SHARED  # noqa: E402

RUNS = ROOT / "bench" / "tokens_runs.jsonl"
# The same runs under earlier ways the learning-rate search judged tags (Task.search_losses)
EARLIER = (
    (ROOT / "bench" / "tokens_runs_plain_search.jsonl",
     'plain cross-entropy, which is mostly "O" (commits 1780b59, ca5457a): the bottleneck adapter\'s search '
     'took 3e-3 and its run never left all-"O"'),
    (ROOT / "bench" / "tokens_runs_majority_balanced.jsonl",
     'cross-entropy with the "O" words and all the others weighing half each (commit 8a844e4): full '
     "fine-tuning took 3e-5 as above, the adapter 3e-4"),
)  # fmt: skip
REPORT = ROOT / "bench" / "TOKENS.md"
KEEP = ("entity_f1", "entity_precision", "entity_recall", "entity_macro_f1", "token_accuracy", "score",
        "score_ci", "lr", "epochs", "epochs_run", "train_seconds", "seconds_per_epoch")  # fmt: skip
SWEEP, POS_SWEEP, SPEED = "probe all layers", "POS probe all layers", "speed"
# Runs other than a method at its defaults, by the settings they change
VARIANTS = {
    SWEEP: {"method": "probe", "method_config": {"sweep_layers": True}},
    POS_SWEEP: {"method": "probe", "method_config": {"sweep_layers": True}},
    "adapter at its default lr": {"method": "adapter", "lr": None},  # the search's choice set aside
}


def rows_file(folder: Path, dataset: str, split: str, rows: int) -> Path:
    """The first ``rows`` sentences of a shared JSONL split (seeded order: the file's)."""
    out = folder / f"{dataset}-{split}-{rows}.jsonl"
    if not out.exists():
        lines = (SHARED / dataset / f"{split}.jsonl").read_text().splitlines()
        out.write_text("\n".join(lines[:rows]) + "\n")
    return out


def train(data: Path, eval_data: Path, seed: int, out: Path, **settings: Any) -> dict[str, Any]:
    from backend.run import run_training
    from backend.training.config import TrainConfig

    cfg = TrainConfig(data=str(data), eval_data=str(eval_data), seed=seed, **settings)
    return run_training(cfg, out, feature_cache_dir=out.parent / "features")


def run_one(method: str, seed: int, rows: int, folder: Path) -> dict[str, Any]:
    started = time.perf_counter()
    base = {"method": method, "seed": seed, "rows": rows, "commit": COMMIT}
    if method == SPEED:
        return {**base, **speed(rows, seed, folder)}
    dataset = "ud_ewt_pos" if method == POS_SWEEP else "wnut17"
    data = rows_file(folder, dataset, "train", rows)
    evaluation = SHARED / dataset / ("test.jsonl" if dataset == "wnut17" else "dev.jsonl")
    settings = VARIANTS.get(method, {"method": method})
    s = train(data, evaluation, seed, folder / f"{method.replace(' ', '-')}-{seed}", **settings)
    kept = {k: s.get(k) for k in KEEP}
    return {**base, **kept, "baseline": s.get("baseline"), "flag": bool(s.get("learning_flag")),
            "per_entity": s.get("per_entity"), "layers": s.get("layer_accuracy"),
            "wall_seconds": round(time.perf_counter() - started, 1)}  # fmt: skip


def speed(rows: int, seed: int, folder: Path) -> dict[str, Any]:
    """LoRA, 2 epochs at lr 3e-3, on the same sentences: a tag per word, then a label per sentence."""
    data = rows_file(folder, "wnut17", "train", rows)
    records = [json.loads(line) for line in data.read_text().splitlines()]
    labelled = folder / "wnut17-sentences.jsonl"
    labelled.write_text("".join(json.dumps({"text": " ".join(r["tokens"]),
                                            "label": "entity" if set(r["tags"]) - {"O"} else "none"}) + "\n"
                                for r in records))  # fmt: skip
    fixed = {"method": "lora", "epochs": 2, "lr": 3e-3, "early_stopping_patience": 0}
    token = train(data, data, seed, folder / "speed-tokens", **fixed)
    label = train(labelled, labelled, seed, folder / "speed-labels", **fixed)
    return {
        "token_seconds_per_epoch": token["seconds_per_epoch"],
        "label_seconds_per_epoch": label["seconds_per_epoch"],
    }


def method_row(method: str, cells: list[dict[str, Any]]) -> str:
    f1 = fmt([c["entity_f1"] for c in cells])
    if len(cells) == 1:
        f1 += " [{:.3f}, {:.3f}]".format(*cells[0]["score_ci"])
    flag = " ⚠" if any(c["flag"] for c in cells) else ""
    others = " | ".join(fmt([c[k] for c in cells]) for k in KEEP[1:5])
    rates = ", ".join(format(c["lr"], "g") for c in cells)
    epochs = ", ".join(f"{c['epochs_run']}/{c['epochs']}" for c in cells)
    commits = ", ".join(sorted({c["commit"] for c in cells}))
    per_epoch = f"{cells[0]['seconds_per_epoch']:.2f}"
    return (
        f"| {method}{flag} | {f1} | {others} | {rates} | {epochs} | {per_epoch} | {len(cells)} | {commits} |"
    )


def layer_table(run: dict[str, Any], metric: str, name: str) -> list[str]:
    layers = sorted(run["layers"], key=lambda r: r["layer"])
    return [
        "| layer | " + " | ".join(str(r["layer"]) for r in layers) + " |",
        "|---|" + "---:|" * len(layers),
        f"| {name} | " + " | ".join(f"{r[metric]:.3f}" for r in layers) + " |",
    ]


def report() -> str:
    runs = read_runs(RUNS)
    lines = [
        "## wnut17: token classification, every method at its defaults (issue 38, `python bench/tokens.py`)",
        "",
        "WNUT-17 emerging entities (../shared/data/wnut17, 6 types, IOB2): the first 1,000 sentences of "
        "train.jsonl, scored on the 1,287 sentences of test.jsonl. Task auto, learning rate and epochs "
        "auto, max length 128, batch 32. Entity F1 (micro, seqeval strict) is primary; its 95% interval "
        'is the bootstrap over test sentences. ⚠ = the run\'s "did not learn" flag. s/epoch includes '
        "whatever else ran on the 2 cores then (the test suite, beside most runs of 965f4b5: full "
        "fine-tuning took 6.4 s/epoch alone at 8a844e4); the speed check at the end ran alone.",
        "",
        "| method | entity F1 [95% CI] | precision | recall | macro F1 | word accuracy | lr | epochs run / "
        "planned | s/epoch (seed 0) | seeds | code |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for method in [*METHODS, *(v for v in VARIANTS if v != POS_SWEEP)]:
        cells = [r for r in runs if r["method"] == method and r["rows"] == 1000]
        if cells:
            lines.append(method_row(method, cells))
    baseline = next((r["baseline"] for r in runs if r.get("baseline") and r["method"] in METHODS), None)
    if baseline:
        lines.append(f"| *baseline: every word 'O'* | {baseline['entity_f1']:.3f} | | | | "
                     f"{baseline['token_accuracy']:.3f} | | | | | |")  # fmt: skip
    sweeps = (
        (SWEEP, "entity_f1", "WNUT-17 entity F1"),
        (POS_SWEEP, "token_accuracy", "UD-EWT POS word accuracy"),
    )
    for name, metric, label in sweeps:
        for run in [r for r in runs if r["method"] == name and r.get("layers")]:
            lines += [
                "",
                f"Layer sweep ({label}, seed {run['seed']}, {run['rows']} training sentences): a "
                "linear probe on each layer's first-sub-word vectors (layer 0 = the embeddings).",
                "",
            ]
            lines += layer_table(run, metric, label)
    for path, how in EARLIER:
        earlier = read_runs(path)
        if not earlier:
            continue
        lines += ["", f"Before: the same runs when the learning-rate search judged candidates by {how}:", ""]
        lines += ["| method | seed | entity F1 | lr | epochs run / planned |", "|---|---:|---:|---|---:|"]
        for r in earlier:
            lines.append(f"| {r['method']} | {r['seed']} | {r['entity_f1']:.3f} | {r['lr']:g} | "
                         f"{r['epochs_run']}/{r['epochs']} |")  # fmt: skip
    for run in [r for r in runs if r["method"] == SPEED]:
        ratio = run["token_seconds_per_epoch"] / run["label_seconds_per_epoch"]
        lines += ["", f"Speed (LoRA, 2 epochs, the same {run['rows']} sentences, one after the other): "
                  f"{run['token_seconds_per_epoch']:.2f} s/epoch as token classification, "
                  f"{run['label_seconds_per_epoch']:.2f} s/epoch as text classification: "
                  f"{ratio:.2f}x."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    methods = [*METHODS, SWEEP, POS_SWEEP, SPEED]
    bench = Bench(__doc__ or "", SHARED / "wnut17", RUNS, REPORT, report, methods, 1000, "bench-tokens-")
    return bench_main(bench, run_one)


if __name__ == "__main__":
    sys.exit(main())
