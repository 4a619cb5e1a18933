"""Schema versions: a ``schema_version`` table and an ordered list of upgrade steps.

A new database gets today's tables (``create_all``) stamped with the current
version. An existing one is upgraded step by step from the version it records, in
the same transaction, so a database made by any older version of the app opens. A
database newer than this code is refused with a message instead of being damaged.

To change the schema: edit ``jobs/schema.py`` and append a function here that
brings a database of the previous version to the new one (``ALTER TABLE ...``).
Never edit a step that has shipped; ``tests/jobs/test_migrations.py`` keeps the
DDL of earlier versions to check that old files still open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection, Engine

from backend.errors import ConfigError
from jobs.schema import Base

Migration = Callable[[Connection], None]

VERSION_TABLE = Table("schema_version", MetaData(), Column("version", Integer, nullable=False))


def add_job_gpu(conn: Connection) -> None:
    """Version 2: jobs record the GPU they hold, so every supervisor sees which are taken."""
    conn.execute(text("ALTER TABLE jobs ADD COLUMN gpu INTEGER"))


def add_metric_layer(conn: Connection) -> None:
    """Version 3: a probe layer sweep's results get a ``layer`` column of their own.

    Until now a sweep stored each layer's result under these two names with the layer
    number in ``epoch``; those rows move it to ``layer`` and leave ``epoch`` NULL. Plain
    SQL that SQLite and PostgreSQL both run; two UPDATEs rather than one ``SET layer =
    epoch, epoch = NULL``, so no database's order of assignments can matter.
    """
    sweep_rows = "name IN ('layer_accuracy', 'layer_macro_f1')"  # frozen: the names of version 2
    conn.execute(text("ALTER TABLE metrics ADD COLUMN layer INTEGER"))
    conn.execute(text(f"UPDATE metrics SET layer = epoch WHERE {sweep_rows}"))
    conn.execute(text(f"UPDATE metrics SET epoch = NULL WHERE {sweep_rows}"))


# The sweeps table exactly as version 4 made it (frozen: later versions change it by steps).
# Its metadata names the datasets table too (never created here: it exists since version 1),
# or the foreign keys to it cannot be resolved when the table is created.
V4_METADATA = MetaData()
Table("datasets", V4_METADATA, Column("id", Integer, primary_key=True))
SWEEPS_V4 = Table(
    "sweeps",
    V4_METADATA,
    Column("id", Integer, primary_key=True),
    Column("name", String(300), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("method", String(32)),
    Column("spec", JSON, nullable=False),
    Column("base_config", JSON, nullable=False),
    Column("dataset_id", Integer, ForeignKey("datasets.id", ondelete="SET NULL")),
    Column("eval_dataset_id", Integer, ForeignKey("datasets.id", ondelete="SET NULL")),
    Column("status", String(16), nullable=False),
    Column("study_name", String(200)),
    Column("created_at", DateTime, nullable=False),
    Column("finished_at", DateTime),
)


def add_sweeps(conn: Connection) -> None:
    """Version 4: sweeps group jobs; a job records its sweep, its point and trial number, and
    the run whose settings it was launched from (lineage of "run again").

    Plain DDL both engines run (SQLite adds a REFERENCES column only with a NULL default,
    which these have).
    """
    SWEEPS_V4.create(conn)
    conn.execute(
        text("ALTER TABLE jobs ADD COLUMN sweep_id INTEGER REFERENCES sweeps(id) ON DELETE SET NULL")
    )
    conn.execute(text("ALTER TABLE jobs ADD COLUMN trial_params JSON"))
    conn.execute(text("ALTER TABLE jobs ADD COLUMN trial_number INTEGER"))
    conn.execute(
        text("ALTER TABLE jobs ADD COLUMN rerun_of_id INTEGER REFERENCES jobs(id) ON DELETE SET NULL")
    )


def add_job_task_score(conn: Connection) -> None:
    """Version 5: a job records its task (NULL: text classification, the only task of every
    run before) and its score, the task's primary metric: for those runs, their accuracy."""
    conn.execute(text("ALTER TABLE jobs ADD COLUMN task VARCHAR(32)"))
    conn.execute(text("ALTER TABLE jobs ADD COLUMN score FLOAT"))
    conn.execute(text("UPDATE jobs SET score = accuracy"))


# Frozen for version 6: the metrics the tasks of that version reported, and each task's baseline
# (the summary key that holds it, and its words), so that later tasks cannot change this step.
V6_METRICS = (
    "accuracy", "macro_f1", "spearman", "pearson", "rmse", "mae",
    "entity_f1", "entity_precision", "entity_recall", "entity_macro_f1", "token_accuracy",
)  # fmt: skip
V6_BASELINES = {
    None: ("majority_baseline", "always the majority class"),
    "classification": ("majority_baseline", "always the majority class"),
    "regression": ("baseline", "always the training mean"),
    "token-classification": ("baseline", "every word 'O' (or the most frequent tag)"),
}


def add_job_results(conn: Connection) -> None:
    """Version 6: a finished run's results as every task has them (issue 46): its primary metric,
    the score's interval, the task's metrics as one object, its baseline's name and score. Filled
    for earlier runs from the summary each stored (JSON read here, as both engines hold it)."""
    for ddl in (
        "primary_metric VARCHAR(64)", "score_ci JSON", "metrics JSON",
        "baseline_name VARCHAR(200)", "baseline_score FLOAT",
    ):  # fmt: skip
        conn.execute(text(f"ALTER TABLE jobs ADD COLUMN {ddl}"))
    jobs = Table(
        "jobs", MetaData(), Column("id", Integer), Column("task", String(32)), Column("summary", JSON),
        Column("primary_metric", String(64)), Column("score_ci", JSON), Column("metrics", JSON),
        Column("baseline_name", String(200)), Column("baseline_score", Float),
    )  # fmt: skip
    for job_id, task, summary in conn.execute(select(jobs.c.id, jobs.c.task, jobs.c.summary)).all():
        if not isinstance(summary, dict):
            continue
        key, name = V6_BASELINES.get(task, (None, None))
        baseline = summary.get(key) if key else None
        score = baseline.get("score", baseline.get("accuracy")) if isinstance(baseline, dict) else None
        values = {
            "primary_metric": summary.get("primary_metric", "accuracy" if "accuracy" in summary else None),
            "score_ci": summary.get("score_ci"),
            "metrics": {k: summary[k] for k in V6_METRICS if summary.get(k) is not None} or None,
            "baseline_name": name if score is not None else None,
            "baseline_score": score,
        }
        conn.execute(jobs.update().where(jobs.c.id == job_id).values(**values))


# MIGRATIONS[i] upgrades version i + 1 to version i + 2. Version 1 is the first schema.
MIGRATIONS: list[Migration] = [add_job_gpu, add_metric_layer, add_sweeps, add_job_task_score, add_job_results]


def current_version(steps: Sequence[Migration] = MIGRATIONS) -> int:
    """The version this code writes: one past the last upgrade step."""
    return 1 + len(steps)


def stored_version(conn: Connection) -> int | None:
    """The version a database records, or None for an empty database."""
    if not inspect(conn).has_table(VERSION_TABLE.name):
        return None
    return conn.execute(select(VERSION_TABLE.c.version)).scalar_one_or_none()


def upgrade(engine: Engine, steps: Sequence[Migration] = MIGRATIONS) -> int:
    """Create or upgrade the schema; returns the version the database is now at."""
    target = current_version(steps)
    # One write transaction: processes opening a new database at once cannot both create it.
    with engine.connect().execution_options(sqlite_immediate=True) as conn, conn.begin():
        if conn.dialect.name == "postgresql":  # SQLite's BEGIN IMMEDIATE does this there
            conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('workbench schema'))"))
        version = stored_version(conn)
        if version is None:
            if inspect(conn).has_table("jobs"):
                raise ConfigError(
                    "the database has job tables but no schema_version table; it was not "
                    "made by this app. Point --db-url / WORKBENCH_DB_URL at another database."
                )
            Base.metadata.create_all(conn)
            VERSION_TABLE.create(conn)
            conn.execute(VERSION_TABLE.insert().values(version=target))
            return target
        if version > target:
            raise ConfigError(
                f"the database is at schema version {version}, newer than this app "
                f"(version {target}); update the app or use another --db-url"
            )
        for index in range(version - 1, target - 1):
            steps[index](conn)
        if version != target:
            conn.execute(VERSION_TABLE.update().values(version=target))
        return target
