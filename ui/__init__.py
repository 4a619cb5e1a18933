"""The web app: ``ui.app.build(api)`` composes the tabs, ``ui.server.serve(...)`` runs it."""
