"""What a finished run leaves behind, and loading it back.

``save`` (the run folder in each library's own format), ``export`` (a zip that works on
another machine), ``merge`` (LoRA folded into its base), ``model_card``, ``load`` (the
Predictor), ``reload_check`` (same predictions in a fresh process), ``csv_safe``. May import
every stage below it (probing, training, methods, data, catalogue); only ``backend.run`` sits above.
"""
