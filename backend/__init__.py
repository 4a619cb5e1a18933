"""The library: data, methods, training, probing and artifacts. No database, no CLI, no Gradio.

Stages, each importing only those below it (``lint-imports`` checks this in ``make test``):

    run          one run start to finish: picks the runner, writes the run folder
    artifacts    save, zip, merge, model card, load (Predictor), reload check
    probing      cached features, probe heads, the probe runner, probe inference
    training     TrainConfig, the loop, checkpoints, metrics, "auto" lr/epochs, runtime
    methods      one file per adaptation method (every fact about it) + the registry
    data         read, check, prepare, batching
    catalogue    base models: where they are, how to load them (quantized or not)
    hub_cache, settings, errors   shared leaves
"""
