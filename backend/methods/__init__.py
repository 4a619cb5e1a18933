"""Adaptation methods: one file each holding every fact about it, registered in ``registry``.

A method file has its Config (settings with label, range and help) and a ``MethodSpec``
(build function, runner, learning-rate candidates, naming knob, CLI flags, whether it is
mergeable, resumable, quantizable). Nothing outside this package names a method.
Imports ``backend.catalogue`` and ``backend.errors`` only.
"""
