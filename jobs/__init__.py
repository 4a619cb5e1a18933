"""Background jobs in a database: schema, migrations, queue, supervisor, worker, views.

The database is the single truth for jobs. Imports ``backend`` only (to run training and
for shared types); never ``service`` or ``ui``.
"""
