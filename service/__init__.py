"""The one public face: the ``Workbench`` API (``api``) and the command line (``cli*``).

The only code that imports both ``jobs`` and ``backend``; the UI imports this package
only (plus the shared error types in ``backend.errors``).
"""
