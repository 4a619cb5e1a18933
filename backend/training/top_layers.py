"""Train only the top N layers on cached hidden states of the frozen layers below.

With ``top_layers`` N (LoRA, IA3, bottleneck adapters, full fine-tuning) the embeddings and the
layers below the cut ``L - N`` hold no trainable weight, so what they give a row is the same in
every epoch: compute it once, keep it, and run only the top N layers in training.

How the training loop uses it::

    cut = cut_index(info.num_layers, method_settings.top_layers)  # None: every layer trains
    if cut is not None:
        cache = LowerLayerCache.build(model, train_enc, cut, device)  # one no-grad pass
        ...
        out = cache.forward(model, rows)  # rows: indices into train_enc
        out.loss.backward()               # out: what model(**train_enc.batch(rows)) returns
        loss = cache.forward(model, rows, task.train_loss)  # or the task's loss of that batch

``forward`` collates ``rows`` itself (``enc.batch(rows)``, labels included) and moves the batch
to ``device``; its output has ``.logits`` and ``.loss`` as the model's own forward. Evaluation
and prediction can keep calling the model as usual (the cache is for training rows only).

How it works, the same for every architecture: ``forward`` calls the model's own forward
with the real batch, but with its layer list swapped for ``layers[cut:]`` and a pre-hook on
layer ``cut`` that replaces the hidden states it receives (the embeddings' output, unused
otherwise) by the cached ones, padded like the batch. Attention masks, position embeddings,
pooling, the head and the loss are the model's own, so only the layer list has to be found
(``backend.methods.layers.find_layer_list``, also through PEFT and ``adapters`` wrappers).

The module that feeds layer 0 (the embeddings) does not run either: found at build as the
outermost module whose output *is* what layer 0 receives, its forward is swapped for one that
returns the cached states (its lookup, norm and dropout were ~3% of a top-2 LoRA or adapter
step on MiniLM). A model that transforms that output before layer 0 has no such module; its
embeddings then run and their output is replaced as above.

What differs from a plain forward in training mode: the lower layers were run in eval mode,
so they get no dropout (the top layers do, as usual). In eval mode results are the same.
Each row is cached unpadded; its states do not depend on its batch's padding as long as the
tokenizer pads on the right (the default of the catalogue's tokenizers; a left-padded row of a
model with absolute positions shifts them, in a plain forward too). Memory: rows x tokens x
hidden x 4 bytes of CPU RAM (SST-2 on MiniLM: ~2.6 GB).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from typing import Any

import torch

from backend.data.batching import Encoded
from backend.methods.layers import find_layer_list, layer_cut


def cut_index(model_info_num_layers: int, top_layers: int) -> int | None:
    """The first trained layer for ``top_layers`` (None: 0, train every layer).

    Raises ConfigError when ``top_layers`` is not below the model's layer count.
    """
    return layer_cut(model_info_num_layers, top_layers)


class _ReachedCut(Exception):
    """Ends the caching pass at layer ``cut``: nothing above it is needed then."""


def _hidden_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    """The hidden states a block is called with (positional in every HF model we know)."""
    return args[0] if args else kwargs["hidden_states"]


def _with_hidden(
    args: tuple[Any, ...], kwargs: dict[str, Any], hidden: torch.Tensor
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if args:
        return (hidden, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": hidden}


def _parent_and_attr(model: Any, name: str) -> tuple[Any, str]:
    parent_name, _, attr = name.rpartition(".")
    return (model.get_submodule(parent_name) if parent_name else model), attr


@contextmanager
def _starting_at(model: Any, layers_name: str, cut: int, hidden: torch.Tensor) -> Iterator[None]:
    """Within the block, the model runs ``layers[cut:]`` only, layer ``cut`` taking ``hidden``."""
    layers = model.get_submodule(layers_name)
    parent, attr = _parent_and_attr(model, layers_name)

    def feed(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        given = _hidden_of(args, kwargs)
        if given.shape[:2] != hidden.shape[:2]:
            raise RuntimeError(
                f"cached states {tuple(hidden.shape)} do not fit the batch {tuple(given.shape)}"
            )
        # The model's dtype (e.g. bf16 weights); under autocast the layers cast as they do anyway.
        return _with_hidden(args, kwargs, hidden.to(given.dtype))

    handle = layers[cut].register_forward_pre_hook(feed, with_kwargs=True)
    # The same block objects in a shorter list: their weights, hooks and layer indices stay.
    setattr(parent, attr, layers[cut:])
    try:
        yield
    finally:
        setattr(parent, attr, layers)
        handle.remove()


@contextmanager
def _returning(module: Any, output: torch.Tensor) -> Iterator[None]:
    """Within the block, ``module`` returns ``output`` without computing anything."""
    own = module.__dict__.get("forward")  # an instance-level forward (accelerate's hooks) to restore
    module.forward = lambda *_args, **_kwargs: output
    try:
        yield
    finally:
        if own is None:
            del module.forward
        else:
            module.forward = own


@contextmanager
def _finding_feeder(model: Any, layers_name: str, first: Any) -> Iterator[dict[str, Any]]:
    """Over the first forward inside the block, find the outermost module whose output is the
    tensor layer 0 receives; afterwards the dict holds its ``name`` and ``dtype`` (if any)."""
    outputs: list[tuple[str, torch.Tensor]] = []
    found: dict[str, Any] = {}

    def record(name: str) -> Any:
        def hook(_module: Any, _args: Any, out: Any) -> None:
            if "fed" not in found and isinstance(out, torch.Tensor):
                outputs.append((name, out))

        return hook

    def fed(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        found.setdefault("fed", _hidden_of(args, kwargs))

    outside = [
        (name, module)
        for name, module in model.named_modules()
        if name and not f"{layers_name}.".startswith(f"{name}.") and not name.startswith(f"{layers_name}.")
    ]
    handles = [module.register_forward_hook(record(name)) for name, module in outside]
    handles.append(first.register_forward_pre_hook(fed, with_kwargs=True))
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()
        matches = [(name, out) for name, out in outputs if out is found.get("fed")]
        if matches:
            name, out = min(matches, key=lambda match: match[0].count("."))
            found.update(name=name, dtype=out.dtype)
        found.pop("fed", None)


class LowerLayerCache:
    """The hidden states entering layer ``cut``, per row of one Encoded split (fp32, CPU)."""

    def __init__(
        self,
        enc: Encoded,
        cut: int,
        device: torch.device,
        states: list[torch.Tensor],
        layers_name: str,
        feeder: dict[str, Any] | None = None,
    ) -> None:
        self.enc, self.cut, self.device, self.states = enc, cut, device, states
        self.layers_name = layers_name  # where the model keeps its blocks (found once, at build)
        # the module feeding layer 0, skipped in forward: {"name", "dtype"} (None: it runs)
        self.feeder = feeder

    @classmethod
    def build(
        cls, model: Any, enc: Encoded, cut: int, device: torch.device, batch_size: int = 64
    ) -> LowerLayerCache:
        """Run the embeddings and layers ``0..cut-1`` over every row of ``enc`` once.

        Eval mode (no dropout) and no gradients; rows go shortest first so batches carry little
        padding; the model's training mode is restored afterwards.
        """
        layers_name, layers = find_layer_list(model)
        if not 0 < cut < len(layers):
            raise ValueError(f"cut must be between 1 and {len(layers) - 1}, got {cut}")
        states: dict[int, torch.Tensor] = {}
        seen: list[torch.Tensor] = []

        def grab(_module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            seen.append(_hidden_of(args, kwargs))
            raise _ReachedCut

        order = enc.by_length()
        was_training = model.training
        handle = layers[cut].register_forward_pre_hook(grab, with_kwargs=True)
        model.eval()
        feeder: dict[str, Any] = {}
        try:
            with torch.no_grad():
                for start in range(0, len(order), batch_size):
                    rows = order[start : start + batch_size]
                    batch = {k: v.to(device) for k, v in enc.batch(rows).items() if k != "labels"}
                    # the first batch also finds the module feeding layer 0
                    finding = (
                        _finding_feeder(model, layers_name, layers[0]) if start == 0 else nullcontext(feeder)
                    )
                    with finding as feeder, suppress(_ReachedCut):
                        model(**batch)
                    if not seen:
                        raise RuntimeError(f"the model's forward never reached layer {cut}")
                    mask = batch["attention_mask"].bool()
                    # Real tokens only, row after row (works for either padding side).
                    flat = seen.pop()[mask].float().cpu()
                    for row, part in zip(rows, flat.split(mask.sum(1).tolist()), strict=True):
                        states[row] = part
        finally:
            handle.remove()
            model.train(was_training)
        states_in_order = [states[i] for i in range(len(enc))]
        return cls(enc, cut, device, states_in_order, layers_name, feeder if feeder else None)

    def forward(
        self, model: Any, rows: list[int], call: Callable[[Any, dict[str, Any]], Any] | None = None
    ) -> Any:
        """``model(**enc.batch(rows))``, the layers below ``cut`` and the embeddings skipped;
        ``call(model, batch)`` instead when given (a task's training loss, ``Task.train_loss``)."""
        batch = {k: v.to(self.device) for k, v in self.enc.batch(rows).items()}
        mask = batch["attention_mask"].bool()
        flat = torch.cat([self.states[r] for r in rows]).to(self.device)
        if flat.shape[0] != int(mask.sum()):
            raise RuntimeError(
                "the batch's tokens differ from the cached rows': was the cache built from this split?"
            )
        # Padding positions get zeros: the attention mask keeps them out of every real token.
        hidden = flat.new_zeros(*mask.shape, flat.shape[-1])
        hidden[mask] = flat
        with ExitStack() as stack:
            stack.enter_context(_starting_at(model, self.layers_name, self.cut, hidden))
            if self.feeder is not None:
                module = model.get_submodule(self.feeder["name"])
                stack.enter_context(_returning(module, hidden.to(self.feeder["dtype"])))
            return call(model, batch) if call is not None else model(**batch)

    def __len__(self) -> int:
        return len(self.states)
