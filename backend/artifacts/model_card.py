"""The README.md model card written into every run folder."""

from __future__ import annotations

from typing import Any

from backend.methods import registry as methods
from backend.offline_models import weights_note as offline_weights_note
from backend.tasks import registry as tasks
from backend.training.autotune import describe_search
from backend.training.callbacks import SUMMARY_METRICS
from backend.training.config import TrainConfig

LOAD_SNIPPETS = {
    "peft": """from transformers import AutoModelForSequenceClassification, AutoTokenizer
from peft import PeftModel
import json
labels = json.load(open("labels.json"))["id2label"]
base = AutoModelForSequenceClassification.from_pretrained(
    "{base}", num_labels={n}, id2label={{int(k): v for k, v in labels.items()}}, pad_token_id={pad})
model = PeftModel.from_pretrained(base, ".").eval()
tok = AutoTokenizer.from_pretrained(".")""",
    "bottleneck": """from transformers import AutoModelForSequenceClassification, AutoTokenizer
from safetensors.torch import load_file
import json, bottleneck  # bottleneck.py: the adapter module, in this folder (torch only)
labels = json.load(open("labels.json"))["id2label"]
model = AutoModelForSequenceClassification.from_pretrained(
    "{base}", num_labels={n}, id2label={{int(k): v for k, v in labels.items()}}, pad_token_id={pad})
model.load_state_dict(load_file("head.safetensors"), strict=False)  # the head that trained with it
bottleneck.load(model, ".").eval()
tok = AutoTokenizer.from_pretrained(".")""",
    "transformers": """from transformers import AutoModelForSequenceClassification, AutoTokenizer
model = AutoModelForSequenceClassification.from_pretrained(".").eval()
tok = AutoTokenizer.from_pretrained(".")""",
    "own": """import json, torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer
cfg = json.load(open("probe_config.json"))
encoder = AutoModel.from_pretrained("{base}").eval()
tok = AutoTokenizer.from_pretrained(".")
state = load_file("probe_head.safetensors")   # keys: net.weight/net.bias (linear) or net.0/net.3 (MLP)
def model(**enc):
    h = encoder(**enc, output_hidden_states=True).hidden_states[cfg["layer"]]
    m = enc["attention_mask"].unsqueeze(-1).float()
    last = (torch.arange(m.shape[1]) * enc["attention_mask"]).argmax(1)  # rightmost real token
    token = h[torch.arange(len(h)), last] if cfg["last_token"] else h[:, 0]  # decoders: no [CLS]
    x = (h * m).sum(1) / m.sum(1) if cfg["pooling"] == "mean" else token
    x = h if cfg.get("per_token") else x  # a tag per token: every position, unpooled
    if cfg["head"] == "linear":
        return x @ state["net.weight"].T + state["net.bias"]
    x = torch.nn.functional.gelu(x @ state["net.0.weight"].T + state["net.0.bias"])
    return x @ state["net.3.weight"].T + state["net.3.bias"]""",
}


LIBRARY_PACKAGE = {"peft": "peft", "bottleneck": "torch", "transformers": "torch", "own": "torch"}


def base_note(manifest: dict[str, Any]) -> str:
    if manifest.get("base_model_hub_id"):
        return " (Hugging Face hub id)"
    return " (a local folder on the training machine: it has no hub id)"


def weights_note(manifest: dict[str, Any]) -> str:
    """A card bullet about where the base weights came from, for the offline models that need one
    (SmolLM2: dequantized from a 4-bit GGUF)."""
    note = offline_weights_note(manifest.get("base_model_hub_id"), manifest.get("base_model_path"))
    return f"- Base weights: {note}\n" if note else ""


def where_base(manifest: dict[str, Any]) -> str:
    """Where the snippet finds the base model."""
    if not manifest.get("base_model_hub_id"):
        return (
            f" `{manifest['base_model']}` is the name of the base model's folder on the training "
            "machine: put its path in the snippet."
        )
    return (
        f" The base model `{manifest['base_model']}` comes from the Hugging Face hub; offline, set "
        "`HF_HUB_OFFLINE=1` and `HF_HOME` to a cache that holds it (the workbench's `models_cache/` "
        "does)."
    )


def autotune_lines(summary: dict[str, Any]) -> str:
    """How "auto" set the epochs and learning rate, and the "did not learn" flag, as card bullets."""
    lines = []
    requested = summary.get("requested") or {}
    if requested.get("epochs") == "auto":
        lines.append(f"- Epochs auto: planned {summary.get('epochs')} from the dataset's size")
    if summary.get("stopped_early"):
        lines.append(
            f"- Early stopping after epoch {summary['stopped_early']}; the best epoch "
            f"({summary.get('best_epoch')}) was kept"
        )
    search = summary.get("lr_search")
    if search:
        lines.append(f"- Learning rate auto: {describe_search(search)}")
    if summary.get("layer_choice"):  # a probe's layer "auto"
        from backend.probing.layer_choice import describe_layer_choice  # imports torch: only here

        lines.append(f"- {describe_layer_choice(summary['layer_choice'])}")
    task = tasks.get(summary.get("task"))
    if baseline := summary.get(task.baseline_key):
        lines.append(f"- Trivial reference on the evaluation set: {task.baseline_text(baseline)}")
    for warning in ("learning_flag", "lr_choice_warning"):
        if summary.get(warning):
            lines.append(f"- **Warning: {summary[warning]}**")
    return "\n".join(lines) + ("\n" if lines else "")


def metric_value(summary: dict[str, Any], key: str) -> str:
    """A metric with its 95% bootstrap interval over the evaluation rows (sentences, for a tag per
    word), where the run has one (``backend.run.run_intervals``: the score's, and macro-F1's for
    classification)."""
    primary = summary.get("primary_metric", "accuracy")
    intervals = {"score": "score_ci", primary: "score_ci", "macro_f1": "macro_f1_ci"}
    interval = summary.get(intervals.get(key, ""))
    if not interval:
        return str(summary[key])
    unit = tasks.get(summary.get("task")).row_unit
    return f"{summary[key]} (95% interval {interval[0]:.4f} to {interval[1]:.4f}, bootstrap over the {unit})"


def render_model_card(manifest: dict[str, Any], cfg: TrainConfig, summary: dict[str, Any]) -> str:
    """Markdown: base model, method, hyperparameters, metrics, and a load-and-predict snippet."""
    lib, task = manifest["library"], tasks.of_manifest(manifest)
    snippet = (
        LOAD_SNIPPETS[lib]
        .format(base=manifest["base_model"], n=len(manifest["label_names"]), pad=manifest["pad_token_id"])
        .replace("AutoModelForSequenceClassification", task.auto_class)
    )
    prompts_in_input = methods.get(manifest["method"]).feeds_embeddings
    predict = (
        '\nenc = tok(["an example text"], return_tensors="pt", truncation=True, '
        f"max_length={cfg.max_length})\n"
        "with torch.no_grad():\n"
        "    out = model(**enc)\n" + task.card_predict(lib, prompts_in_input)
    )
    where = where_base(manifest)
    knobs = "\n".join(f"| {k} | {v} |" for k, v in cfg.method_config.items()) or "| (defaults) | |"
    shown = dict.fromkeys([*task.headline, *SUMMARY_METRICS])  # the task's metrics first, in order
    metrics = "\n".join(f"| {k} | {metric_value(summary, k)} |" for k in shown if summary.get(k) is not None)
    quant_note = ""
    if manifest["quant"] != "none":
        quant_note = (
            f" The base was {manifest['quant']}-quantized during training; the adapter also loads on the "
            "full-precision base as below (predictions differ slightly). For identical predictions pass "
            "`quantization_config=BitsAndBytesConfig(...)` with the settings in `workbench.json` "
            "(NF4 + double quantization for 4-bit; the head kept out via `llm_int8_skip_modules`)."
        )
    own = manifest.get("task_config") or {}  # the task's own settings (the tag scheme...)
    given = {k: v for k, v in own.items() if v not in ("", None)}  # an empty setting says nothing
    task_lines = f"- Task: {task.label}" + "".join(f", {k} {v}" for k, v in given.items()) + "\n"
    return f"""# {manifest["method"]} adapter for `{manifest["base_model"]}`

Trained with the adaptation workbench. {task.card_outputs(manifest["label_names"])}

- Base model: `{manifest["base_model"]}`{base_note(manifest)}
{weights_note(manifest)}- Method: **{manifest["method"]}** (saved in the `{lib}` library's format)
- Quantization of the base during training: {manifest["quant"]}
- Epochs {cfg.effective_epochs}, learning rate {cfg.effective_lr}, batch size {cfg.batch_size},
  max length {cfg.max_length}, seed {cfg.seed}
{task_lines}{autotune_lines(summary)}
## Method settings
| setting | value |
|---|---|
{knobs}

## Evaluation (best epoch)
| metric | value |
|---|---|
{metrics}

## Load and predict
Run from this folder, with transformers and {LIBRARY_PACKAGE[lib]} installed.{where}{quant_note}

```python
import torch
{snippet}{predict}```
"""
