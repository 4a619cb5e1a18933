"""Tasks: what a run learns to output, each in one file (``classification``, ``regression``).

A task holds every fact about itself: how it recognises its label column, how labels become
training targets, the model head it needs, its metrics and the primary one, its trivial
baseline and its score interval. Nothing outside this package names a task: the rest of the
app asks the task object (``registry.get`` / ``registry.resolve``).
"""
