"""Probing a frozen encoder: every layer's pooled features once (cached), heads trained on them.

``features`` (encoder pass + cache), ``heads`` (head training, lr search on features),
``run`` (the probe runner), ``inference`` (encoder + head for prediction). Imports
training, methods, data and catalogue; never artifacts or run.
"""
