"""Training through the model's forward pass, and what every run shares.

``config`` (TrainConfig + validation), ``loop`` (the epoch/step loop and its runner),
``checkpoint`` (resumable per-epoch state), ``metrics`` (evaluation), ``autotune`` and
``lr_search`` + ``lr_search_model`` ("auto" epochs and learning rate), ``callbacks`` (the progress hook),
``outcome`` (what a runner gets and returns), ``runtime`` (device, seed, memory), ``params``
(exact trainable counts on the meta device). Imports methods, data, catalogue; never
probing, artifacts or run (they sit above).
"""
