"""Forecast before launch: how long a run will take and how much memory it will peak at.

The arithmetic lives in ``backend.forecast``; this part gathers its inputs: the dataset's
token lengths under the chosen model's tokenizer (a sample, cached), the run plan (epochs,
training rows), the parameter count, and the throughput of this machine, calibrated from
finished runs in the database:

1. succeeded runs of the same model and method here: their padded training tokens/s;
2. else the model FLOPs utilisation (MFU) of finished runs here of that method (else of any
   method) times this device's peak (measured once) over the FLOPs a token costs;
3. else a 25% MFU guess, and the text says so.

Memory: the activation coefficient is fitted to the peak memory of finished runs on this
device; until there is one, ``backend.forecast.ACTIVATION_BYTES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from backend.methods import registry
from backend.methods.layers import trained_layer_share
from backend.training.config import TrainConfig
from jobs import datasets
from jobs.schema import SUCCEEDED, Job
from service import forecast_history as fh
from service.api_state import WorkbenchState
from service.formatting import duration

DEFAULT_MFU = 0.25  # a guess until this machine has finished a run: the text says so
HISTORY = 50  # newest finished runs considered


@dataclass
class _Inputs:
    cfg: TrainConfig
    plan: dict[str, Any]
    lengths: list[int]
    eval_rows: int
    counted: dict[str, Any]
    hidden_size: int
    num_layers: int
    embedding: int  # weights in the token embedding table


class ForecastApi(WorkbenchState):
    """``forecast`` (mixed into ``Workbench``)."""

    count_parameters: Any  # from CatalogueApi
    plan_run: Any
    _dataset_config: Any

    def forecast(
        self,
        dataset_id: int,
        method: str,
        method_config: dict[str, Any] | None = None,
        *,
        eval_dataset_id: int | None = None,
        **settings: Any,
    ) -> dict[str, Any]:
        """Time (per epoch, evaluation, learning-rate search, total) and peak memory of a run,
        whether it fits this machine, and one line of text with the setting to change if not."""
        from backend import forecast as fc
        from backend.training.runtime import resolve_precision

        got = self._inputs(int(dataset_id), method, method_config, eval_dataset_id, settings)
        cfg, plan, epochs = got.cfg, got.plan, got.plan["epochs"]
        device = "cuda" if _cuda() else "cpu"
        precision = resolve_precision(cfg.precision, device, cfg.quant)
        throughput, source = self._throughput(
            cfg.model, method, device, precision, got.counted, got.embedding, got.num_layers
        )
        train = fc.padded_tokens(
            got.lengths, plan["train_rows"], cfg.batch_size, cfg.max_length, cfg.group_by_length, cfg.seed
        )
        evals = fc.eval_padded_tokens(got.lengths, got.eval_rows, cfg.max_length)
        if registry.get(method).probes_layers:  # features: one forward pass over every row, a cheap head
            train, evals = train / (fc.EVAL_SPEEDUP * epochs), evals / epochs
        share, overhead, eval_rate = self._history(device, cfg.model, method, plan["search_share"])
        total = got.counted["total"]
        shape = _shape(
            total, got.counted["trainable"], got.hidden_size, got.num_layers, cfg.quant, method,
            _checkpointed(cfg.gradient_checkpointing, method, total),
        )  # fmt: skip
        longest = min(cfg.max_length, max(got.lengths, default=1))
        batch = min(cfg.batch_size, max(1, plan["train_rows"]))  # no batch holds more rows than there are
        peak = fc.memory_mb(
            shape, batch, longest, base_mb=self._base_mb(device, method) or fc.PROCESS_BASE_MB
        )
        result = fc.forecast_run(
            train_tokens=train, eval_tokens=evals, epochs=epochs, throughput=throughput, source=source,
            search_share=share, peak_mb=peak, eval_throughput=eval_rate,
            overhead_seconds=overhead, layer_share=trained_layer_share(cfg.method_settings(), got.num_layers),
        )  # fmt: skip
        available = _available_mb(device)
        fits = fc.fits(peak, available)
        advice = "" if fits else fc.memory_advice(shape, batch, longest, cfg.batch_size)
        return {
            "seconds_per_epoch": result.seconds_per_epoch,
            "eval_seconds": result.eval_seconds,
            "search_seconds": result.search_seconds,
            "total_seconds": result.total_seconds,
            "epochs": epochs,
            "peak_mb": peak,
            "available_mb": available,
            "device": device,
            "fits": fits,
            "advice": advice,
            "source": source,
            "text": describe(result, epochs, available, device, advice, bool(cfg.early_stopping_patience)),
        }

    def _history(
        self, device: str, model: str, method: str, budget_share: float
    ) -> tuple[float, float, float | None]:
        """(search share, fixed seconds, evaluation tokens/s) from finished runs here: of this
        model and method where there are some, else of this model. ``budget_share``: the search's
        budget against the planned training time (0: no search), taken without such runs."""
        history = self._finished(device)
        same = [j.summary or {} for j in history if j.model == model and j.method == method]
        model_runs = [j.summary or {} for j in history if j.model == model]
        heads_only = registry.get(method).probes_layers  # its search trains heads: seconds, not minutes
        share = (fh.search_share(same) or budget_share) if budget_share and not heads_only else 0.0
        overhead = fh.overhead_seconds(same) or fh.overhead_seconds(model_runs) or 0.0
        return share, overhead, fh.eval_throughput(model_runs)

    def _inputs(
        self, dataset_id: int, method: str, method_config: Any, eval_id: int | None, settings: dict[str, Any]
    ) -> _Inputs:
        from backend.catalogue import load_config, model_info

        row, cfg = self._dataset_config(dataset_id, method, method_config, settings)
        plan = self.plan_run(row.id, method, method_config, has_eval_file=bool(eval_id), **settings)
        with self._lock:
            info = model_info(cfg.model, self.settings.models_cache)
            _, config = load_config(cfg.model, self.settings.models_cache)
        eval_row = datasets.get(self.db, int(eval_id)) if eval_id else None
        eval_rows = eval_row.rows if eval_row else max(0, row.rows - plan["train_rows"])
        labels = max(2, len(row.label_counts or {}))
        counted = self.count_parameters(cfg.model, method, cfg.method_config, num_labels=labels)
        lengths = self._token_lengths(row, info)
        embedding = int(getattr(config, "vocab_size", 0) or 0) * info.hidden_size
        return _Inputs(cfg, plan, lengths, eval_rows, counted, info.hidden_size, info.num_layers, embedding)

    def _token_lengths(self, row: Any, info: Any) -> list[int]:
        """A sample of the dataset's token lengths under the model's tokenizer (cached)."""
        from backend.catalogue import load_tokenizer
        from backend.forecast import sample_token_lengths

        cache: dict[tuple[int, str], list[int]] = self.__dict__.setdefault("_lengths_cache", {})
        key = (row.id, info.path)
        if key not in cache:
            with self._lock:
                tokenizer = load_tokenizer(info)
            cache[key] = sample_token_lengths(
                row.path, row.text_column, row.label_column, row.text_pair_column, tokenizer
            )
        return cache[key]

    def _finished(self, device: str) -> list[Job]:
        with self.db.read() as session:
            query = select(Job).where(Job.status == SUCCEEDED).order_by(Job.id.desc()).limit(HISTORY)
            return [j for j in session.scalars(query) if (j.device or "cpu").startswith(device) and j.summary]

    def _throughput(
        self,
        model: str,
        method: str,
        device: str,
        precision: str,
        counted: dict[str, Any],
        embedding: int,
        num_layers: int,
    ) -> tuple[float, str]:
        """Padded training tokens per second on this device, as if every layer ran (a run that
        trained the top N of L layers counts N / L of its figure), and where it came from."""
        from backend.forecast import calibrated_throughput, padded_throughput

        runs = [j for j in self._finished(device) if (j.summary or {}).get("precision", "fp32") == precision]
        same = [
            (padded_throughput(j.summary or {}) or 0.0) * _layer_share(j, num_layers)
            for j in runs
            if j.model == model and j.method == method
        ]
        measured = calibrated_throughput([t for t in same if t])
        if measured:
            n = sum(1 for t in same if t)
            return measured, f"from {n} finished {method} run{'s' * (n > 1)} of this model here"
        from backend.training.throughput import measured_peak_flops, train_flops_per_token

        # The utilisation already counts only the layers a run computed (throughput.py).
        mfus = [j.summary["mfu"] for j in runs if j.method == method and (j.summary or {}).get("mfu")]
        mfus = mfus or [j.summary["mfu"] for j in runs if (j.summary or {}).get("mfu")]
        mfu = calibrated_throughput(mfus)
        # Embedding tables are lookups, not FLOPs (half of MiniLM's weights are its vocabulary).
        flops = train_flops_per_token(max(1, counted["total"] - embedding), counted["trainable"])
        with self._lock:
            peak = measured_peak_flops(device, precision)
        if mfu:
            return (
                mfu * peak / flops,
                f"from the utilisation of {len(mfus)} finished run(s) here (no {method} run of this model)",
            )
        return DEFAULT_MFU * peak / flops, "a first guess (no finished run here yet): it improves after one"

    def _base_mb(self, device: str, method: str) -> float | None:
        """The process's own memory, fitted to the peaks of finished runs here of the same kind
        (probes or trained models: a probe's process never holds an optimizer or a search's
        candidate copies, and was forecast 81% over when fitted to training runs)."""
        from backend.catalogue import model_info
        from backend.forecast import fit_base_mb

        probes = registry.get(method).probes_layers
        finished = self._finished(device)
        same_kind = [j for j in finished if registry.get(j.method).probes_layers == probes]
        samples = []
        for job in (same_kind or finished)[:10]:
            s, cfg = job.summary or {}, job.config or {}
            if not (s.get("peak_rss_mb") and s.get("trainable_params") and s.get("total_params")):
                continue
            try:
                info = model_info(job.model, self.settings.models_cache)
            except Exception:  # noqa: BLE001 - a hub model not cached any more: skip it
                continue
            layers, quant = info.num_layers, job.quant or "none"
            shape = _shape(
                s["total_params"], s["trainable_params"], info.hidden_size, layers, quant, job.method,
                bool(s.get("gradient_checkpointing")),
            )  # fmt: skip
            longest = s.get("longest_tokens") or cfg.get("max_length", 128)
            batch = min(cfg.get("batch_size", 32), s.get("train_rows") or 10**9)
            samples.append((shape, batch, longest, s["peak_rss_mb"]))
        return fit_base_mb(samples)


def _shape(
    total: int, trainable: int, hidden: int, layers: int, quant: str, method: str, checkpointed: bool
) -> Any:
    """The memory model's view of a run. A probe computes its features without gradients, so
    only the layer being computed holds activations, not every layer as in training."""
    from backend.forecast import ModelShape

    probe = registry.get(method).probes_layers
    return ModelShape(total, trainable, hidden, 1 if probe else layers, quant, checkpointed and not probe)


def _layer_share(job: Job, num_layers: int) -> float:
    """The share of the layers a finished job ran every epoch (its "Train top layers")."""
    settings = registry.get(job.method).make_config((job.config or {}).get("method_config") or {})
    return trained_layer_share(settings, num_layers)


def _checkpointed(setting: str, method: str, total_params: int) -> bool:
    """Whether the run will train with gradient checkpointing (as backend.training.loop decides)."""
    from backend.training.runtime import use_checkpointing

    return use_checkpointing(setting, registry.get(method).gradient_checkpointing, total_params)


def describe(result: Any, epochs: int, available_mb: float, device: str, advice: str, stops: bool) -> str:
    """One Markdown line: total time and its parts, peak memory against what there is."""
    parts = [f"{duration(result.seconds_per_epoch)} per epoch × {epochs}"]
    if result.eval_seconds >= 1:
        parts.append(f"evaluation {duration(result.eval_seconds)} per epoch")
    if result.search_seconds:
        parts.append(f"learning-rate search {duration(result.search_seconds)}")
    memory = "GPU memory" if device == "cuda" else "RAM"
    line = (
        f"**Forecast:** {'at most ' if stops else ''}about {duration(result.total_seconds)} "
        f"({', '.join(parts)}{'; early stopping may end it sooner' if stops else ''}) · peak memory about "
        f"{result.peak_mb / 1024:.1f} GB of {available_mb / 1024:.0f} GB {memory} · {result.source}"
    )
    if advice:
        line += f"\n\n⚠ **May not fit:** the forecast peak is above 90% of the {memory}; {advice}."
    return line


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _available_mb(device: str) -> float:
    from backend.forecast import available_mb

    return available_mb(device)
