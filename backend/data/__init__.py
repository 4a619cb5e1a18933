"""Labelled tables in: read a file once, check it, map its columns, split it, batch it.

From the bottom up: ``cells`` (missing values, number-like text), ``mapping`` (which column
is text, pair, label), ``read`` (CSV/TSV/JSON(L)/Parquet, size and cell limits), ``limits``,
``sampling`` (stratified indices), ``check`` (usable rows, labels, classes), ``spec``
(``DatasetSpec``: one read's facts), ``prepare`` (train/eval splits) and ``stats`` (what the UI
previews), ``batching`` (tokenized, length-bucketed batches). Imports only ``backend.errors``.
"""
