"""The web app: ``ui.app.build(api)`` composes the tabs, ``ui.server.serve(...)`` runs it.

Imports ``service`` only (plus the shared error types in ``backend.errors``); it names no
method: forms and choices come from the metadata the service lists.
"""
