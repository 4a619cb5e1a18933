"""Labelled tables in: read a file, check it, map its columns, split it, batch it.

Imports only ``backend.errors`` (and pandas/numpy): every later stage builds on it.
"""
