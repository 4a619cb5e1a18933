"""Schema versioning: databases made by earlier schema versions still open.

``V1_DDL`` and ``V2_SQLITE_DDL`` / ``V2_POSTGRES_DDL`` are frozen copies of what versions
1 and 2 wrote to disk (version 2: what ``create_all`` made, per database). They must never
change: they stand for the databases users already have.

The PostgreSQL cases run on the session's real server (``tests/pg_server.py``), each in a
database of its own.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import JSON, Column, Float, Integer, MetaData, String, Table, inspect, text
from sqlalchemy.engine import Connection

from backend.errors import ConfigError
from backend.settings import Settings
from backend.training.callbacks import LayerInfo
from jobs import migrations
from jobs.db import Database, make_engine
from jobs.reporting import JobLog, JobReporter
from service.api import Workbench

V1_DDL = """
CREATE TABLE datasets (
    id INTEGER NOT NULL, name VARCHAR(200) NOT NULL, path TEXT NOT NULL,
    sha256 VARCHAR(64) NOT NULL, mapping_key TEXT NOT NULL, text_column VARCHAR(200) NOT NULL,
    text_pair_column VARCHAR(200), label_column VARCHAR(200) NOT NULL, columns JSON NOT NULL,
    rows INTEGER NOT NULL, invalid_rows INTEGER NOT NULL, label_counts JSON NOT NULL,
    created_at DATETIME NOT NULL, PRIMARY KEY (id),
    CONSTRAINT uq_dataset_file_mapping UNIQUE (sha256, mapping_key)
);
CREATE TABLE supervisors (
    token VARCHAR(64) NOT NULL, host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL,
    process_started DOUBLE NOT NULL, max_concurrent INTEGER NOT NULL,
    started_at DATETIME NOT NULL, heartbeat_at DATETIME NOT NULL, PRIMARY KEY (token)
);
CREATE TABLE jobs (
    id INTEGER NOT NULL, name VARCHAR(300) NOT NULL, status VARCHAR(16) NOT NULL,
    method VARCHAR(32) NOT NULL, model TEXT NOT NULL, quant VARCHAR(8) NOT NULL,
    config JSON NOT NULL, dataset_id INTEGER, eval_dataset_id INTEGER, device VARCHAR(32),
    created_at DATETIME NOT NULL, started_at DATETIME, finished_at DATETIME,
    claimed_by VARCHAR(64), worker_host VARCHAR(255), worker_pid INTEGER, worker_started DOUBLE,
    heartbeat_at DATETIME, cancel_requested_at DATETIME, progress FLOAT NOT NULL, epoch INTEGER,
    total_epochs INTEGER, step INTEGER, total_steps INTEGER, eta_seconds DOUBLE,
    checkpoint_epoch INTEGER, error TEXT, error_kind VARCHAR(16), error_detail TEXT,
    artifact_dir TEXT, log_path TEXT, accuracy DOUBLE, macro_f1 DOUBLE, eval_loss DOUBLE,
    trainable_params INTEGER, total_params INTEGER, train_seconds DOUBLE, peak_rss_mb DOUBLE,
    adapter_bytes INTEGER, summary JSON, evaluation JSON, resumed_from_id INTEGER,
    resume_checkpoint TEXT, PRIMARY KEY (id),
    FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(eval_dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(resumed_from_id) REFERENCES jobs (id) ON DELETE SET NULL
);
CREATE INDEX ix_jobs_status_id ON jobs (status, id);
CREATE TABLE metrics (
    id INTEGER NOT NULL, job_id INTEGER NOT NULL, step INTEGER NOT NULL, epoch INTEGER,
    name VARCHAR(64) NOT NULL, value DOUBLE NOT NULL, time DOUBLE NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(job_id) REFERENCES jobs (id) ON DELETE CASCADE
);
CREATE INDEX ix_metrics_job_name_step ON metrics (job_id, name, step);
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
INSERT INTO datasets VALUES (1, 'reviews', '/data/reviews.csv', 'abc', 'text\x1f\x1flabel',
    'text', NULL, 'label', '["text", "label"]', 10, 0, '{"neg": 5, "pos": 5}',
    '2024-01-02 03:04:05.000000');
INSERT INTO jobs (id, name, status, method, model, quant, config, dataset_id, created_at,
    finished_at, progress, accuracy, macro_f1, summary)
VALUES (1, 'lora r=8 · reviews', 'succeeded', 'lora', 'all-MiniLM-L6-v2', 'none',
    '{"method": "lora", "method_config": {"rank": 8}}', 1, '2024-01-02 03:04:06.000000',
    '2024-01-02 03:05:06.000000', 1.0, 0.9, 0.89, '{"accuracy": 0.9}');
INSERT INTO jobs (id, name, status, method, model, quant, config, created_at, progress)
VALUES (2, 'probe · reviews', 'queued', 'probe', 'all-MiniLM-L6-v2', 'none',
    '{"method": "probe"}', '2024-01-02 03:04:07.000000', 0.0);
INSERT INTO metrics VALUES (1, 1, 1, 1, 'train_loss', 0.7, 1704164646.0);
INSERT INTO metrics VALUES (2, 1, 2, 1, 'eval_accuracy', 0.9, 1704164647.0);
"""


def v1_database(path: Path) -> str:
    """A database file exactly as version 1 of the app left it; its URL."""
    with sqlite3.connect(path) as conn:
        conn.executescript(V1_DDL)
    return f"sqlite:///{path}"


def columns(url: str) -> dict[str, list[str]]:
    inspector = inspect(make_engine(url))
    return {
        t: sorted(c["name"] for c in inspector.get_columns(t)) for t in sorted(inspector.get_table_names())
    }


def test_a_version_1_database_opens_with_its_rows(tmp_path: Path) -> None:
    url = v1_database(tmp_path / "old.db")
    bench = Workbench(Settings(data_dir=tmp_path, models_cache=tmp_path / "m", db_url=url))
    rows = bench.list_jobs()
    assert [(r["id"], r["status"]) for r in rows] == [(2, "queued"), (1, "succeeded")]
    assert rows[1]["knobs"] == "r=8" and rows[1]["dataset"] == "reviews"
    assert rows[1]["created"] == "2024-01-02T03:04:06+00:00"
    job = bench.get_job(1)
    assert job["series"]["train_loss"] == [[1, 0.7]]
    assert job["series"]["eval_accuracy"] == [[1, 0.9]]
    assert bench.list_datasets()[0]["label_counts"] == {"neg": 5, "pos": 5}
    # Upgraded to exactly what a new database gets.
    fresh = f"sqlite:///{tmp_path / 'new.db'}"
    Database(fresh)
    assert columns(url) == columns(fresh)


def test_upgrade_steps_run_in_order_and_keep_data(tmp_path: Path) -> None:
    url = v1_database(tmp_path / "old.db")

    def add_priority(conn: Connection) -> None:
        conn.execute(text("ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0"))

    def add_index(conn: Connection) -> None:
        conn.execute(text("CREATE INDEX ix_jobs_priority ON jobs (priority)"))

    engine = make_engine(url)
    assert migrations.upgrade(engine, [add_priority, add_index]) == 3
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == 3
        assert conn.execute(text("SELECT priority FROM jobs ORDER BY id")).scalars().all() == [0, 0]
    assert migrations.upgrade(engine, [add_priority, add_index]) == 3  # idempotent


def test_newer_or_foreign_databases_are_refused(tmp_path: Path) -> None:
    url = v1_database(tmp_path / "future.db")
    with sqlite3.connect(tmp_path / "future.db") as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(ConfigError, match="newer than this app"):
        Database(url)
    with sqlite3.connect(tmp_path / "foreign.db") as conn:
        conn.execute("CREATE TABLE jobs (id INTEGER)")
    with pytest.raises(ConfigError, match="not made by this app"):
        Database(f"sqlite:///{tmp_path / 'foreign.db'}")


def test_wal_mode_and_pragmas(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_version_2_records_the_gpu_a_job_holds(tmp_path: Path) -> None:
    url = v1_database(tmp_path / "old.db")
    Database(url)
    with make_engine(url).connect() as conn:
        assert (
            conn.execute(text("SELECT version FROM schema_version")).scalar() == migrations.current_version()
        )
        assert conn.execute(text("SELECT id, gpu FROM jobs ORDER BY id")).all() == [(1, None), (2, None)]


# Version 2 as a new database got it from ``create_all`` (SQLite, the default).
V2_SQLITE_DDL = """
CREATE TABLE datasets (
    id INTEGER NOT NULL, name VARCHAR(200) NOT NULL, path TEXT NOT NULL,
    sha256 VARCHAR(64) NOT NULL, mapping_key TEXT NOT NULL, text_column VARCHAR(200) NOT NULL,
    text_pair_column VARCHAR(200), label_column VARCHAR(200) NOT NULL, columns JSON NOT NULL,
    rows INTEGER NOT NULL, invalid_rows INTEGER NOT NULL, label_counts JSON NOT NULL,
    created_at DATETIME NOT NULL, PRIMARY KEY (id),
    CONSTRAINT uq_dataset_file_mapping UNIQUE (sha256, mapping_key)
);
CREATE TABLE supervisors (
    token VARCHAR(64) NOT NULL, host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL,
    process_started DOUBLE NOT NULL, max_concurrent INTEGER NOT NULL,
    started_at DATETIME NOT NULL, heartbeat_at DATETIME NOT NULL, PRIMARY KEY (token)
);
CREATE TABLE jobs (
    id INTEGER NOT NULL, name VARCHAR(300) NOT NULL, status VARCHAR(16) NOT NULL,
    method VARCHAR(32) NOT NULL, model TEXT NOT NULL, quant VARCHAR(8) NOT NULL,
    config JSON NOT NULL, dataset_id INTEGER, eval_dataset_id INTEGER, device VARCHAR(32),
    created_at DATETIME NOT NULL, started_at DATETIME, finished_at DATETIME,
    claimed_by VARCHAR(64), worker_host VARCHAR(255), worker_pid INTEGER, worker_started DOUBLE,
    gpu INTEGER, heartbeat_at DATETIME, cancel_requested_at DATETIME, progress FLOAT NOT NULL,
    epoch INTEGER, total_epochs INTEGER, step INTEGER, total_steps INTEGER, eta_seconds DOUBLE,
    checkpoint_epoch INTEGER, error TEXT, error_kind VARCHAR(16), error_detail TEXT,
    artifact_dir TEXT, log_path TEXT, accuracy DOUBLE, macro_f1 DOUBLE, eval_loss DOUBLE,
    trainable_params INTEGER, total_params INTEGER, train_seconds DOUBLE, peak_rss_mb DOUBLE,
    adapter_bytes INTEGER, summary JSON, evaluation JSON, resumed_from_id INTEGER,
    resume_checkpoint TEXT, PRIMARY KEY (id),
    FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(eval_dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(resumed_from_id) REFERENCES jobs (id) ON DELETE SET NULL
);
CREATE INDEX ix_jobs_status_id ON jobs (status, id);
CREATE TABLE metrics (
    id INTEGER NOT NULL, job_id INTEGER NOT NULL, step INTEGER NOT NULL, epoch INTEGER,
    name VARCHAR(64) NOT NULL, value DOUBLE NOT NULL, time DOUBLE NOT NULL, PRIMARY KEY (id),
    FOREIGN KEY(job_id) REFERENCES jobs (id) ON DELETE CASCADE
);
CREATE INDEX ix_metrics_job_name_step ON metrics (job_id, name, step);
CREATE TABLE schema_version (version INTEGER NOT NULL);
"""

# The same version 2 on PostgreSQL.
V2_POSTGRES_DDL = """
CREATE TABLE datasets (
    id SERIAL NOT NULL, name VARCHAR(200) NOT NULL, path TEXT NOT NULL,
    sha256 VARCHAR(64) NOT NULL, mapping_key TEXT NOT NULL, text_column VARCHAR(200) NOT NULL,
    text_pair_column VARCHAR(200), label_column VARCHAR(200) NOT NULL, columns JSON NOT NULL,
    rows INTEGER NOT NULL, invalid_rows INTEGER NOT NULL, label_counts JSON NOT NULL,
    created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (id),
    CONSTRAINT uq_dataset_file_mapping UNIQUE (sha256, mapping_key)
);
CREATE TABLE supervisors (
    token VARCHAR(64) NOT NULL, host VARCHAR(255) NOT NULL, pid INTEGER NOT NULL,
    process_started DOUBLE PRECISION NOT NULL, max_concurrent INTEGER NOT NULL,
    started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
    heartbeat_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, PRIMARY KEY (token)
);
CREATE TABLE jobs (
    id SERIAL NOT NULL, name VARCHAR(300) NOT NULL, status VARCHAR(16) NOT NULL,
    method VARCHAR(32) NOT NULL, model TEXT NOT NULL, quant VARCHAR(8) NOT NULL,
    config JSON NOT NULL, dataset_id INTEGER, eval_dataset_id INTEGER, device VARCHAR(32),
    created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, started_at TIMESTAMP WITHOUT TIME ZONE,
    finished_at TIMESTAMP WITHOUT TIME ZONE, claimed_by VARCHAR(64), worker_host VARCHAR(255),
    worker_pid INTEGER, worker_started DOUBLE PRECISION, gpu INTEGER,
    heartbeat_at TIMESTAMP WITHOUT TIME ZONE, cancel_requested_at TIMESTAMP WITHOUT TIME ZONE,
    progress FLOAT NOT NULL, epoch INTEGER, total_epochs INTEGER, step INTEGER,
    total_steps INTEGER, eta_seconds DOUBLE PRECISION, checkpoint_epoch INTEGER, error TEXT,
    error_kind VARCHAR(16), error_detail TEXT, artifact_dir TEXT, log_path TEXT,
    accuracy DOUBLE PRECISION, macro_f1 DOUBLE PRECISION, eval_loss DOUBLE PRECISION,
    trainable_params INTEGER, total_params INTEGER, train_seconds DOUBLE PRECISION,
    peak_rss_mb DOUBLE PRECISION, adapter_bytes INTEGER, summary JSON, evaluation JSON,
    resumed_from_id INTEGER, resume_checkpoint TEXT, PRIMARY KEY (id),
    FOREIGN KEY(dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(eval_dataset_id) REFERENCES datasets (id) ON DELETE SET NULL,
    FOREIGN KEY(resumed_from_id) REFERENCES jobs (id) ON DELETE SET NULL
);
CREATE INDEX ix_jobs_status_id ON jobs (status, id);
CREATE TABLE metrics (
    id SERIAL NOT NULL, job_id INTEGER NOT NULL, step INTEGER NOT NULL, epoch INTEGER,
    name VARCHAR(64) NOT NULL, value DOUBLE PRECISION NOT NULL, time DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (id), FOREIGN KEY(job_id) REFERENCES jobs (id) ON DELETE CASCADE
);
CREATE INDEX ix_metrics_job_name_step ON metrics (job_id, name, step);
CREATE TABLE schema_version (version INTEGER NOT NULL);
"""

# Rows as version 2 wrote them, in SQL both databases read (ids left to the database, so a
# PostgreSQL sequence stays in step): a LoRA run and a probe layer sweep, whose reporter kept
# each layer's number in ``epoch`` and the layers done so far in ``step``.
V2_ROWS = """
INSERT INTO schema_version VALUES (2);
INSERT INTO datasets (name, path, sha256, mapping_key, text_column, label_column, columns, rows,
    invalid_rows, label_counts, created_at)
VALUES ('reviews', '/data/reviews.csv', 'abc', 'text||label', 'text', 'label',
    '["text", "label"]', 10, 0, '{"neg": 5, "pos": 5}', '2024-01-02 03:04:05.000000');
INSERT INTO jobs (name, status, method, model, quant, config, dataset_id, created_at, progress)
VALUES ('lora r=8 · reviews', 'succeeded', 'lora', 'all-MiniLM-L6-v2', 'none',
    '{"method": "lora", "method_config": {"rank": 8}}', 1, '2024-01-02 03:04:06.000000', 1.0);
INSERT INTO jobs (name, status, method, model, quant, config, dataset_id, created_at, progress,
    epoch, total_epochs, accuracy, summary)
VALUES ('probe all layers · reviews', 'succeeded', 'probe', 'all-MiniLM-L6-v2', 'none',
    '{"method": "probe", "method_config": {"sweep_layers": true}}', 1,
    '2024-01-02 03:04:07.000000', 1.0, 3, 3, 0.9, '{"accuracy": 0.9}');
INSERT INTO metrics (job_id, step, epoch, name, value, time) VALUES
    (1, 1, 1, 'train_loss', 0.7, 1704164646.0),
    (1, 2, 1, 'eval_accuracy', 0.8, 1704164647.0),
    (2, 1, 0, 'layer_accuracy', 0.6, 1704164650.0),
    (2, 1, 0, 'layer_macro_f1', 0.55, 1704164650.0),
    (2, 2, 1, 'layer_accuracy', 0.9, 1704164651.0),
    (2, 2, 1, 'layer_macro_f1', 0.88, 1704164651.0),
    (2, 3, 2, 'layer_accuracy', 0.7, 1704164652.0),
    (2, 3, 2, 'layer_macro_f1', 0.66, 1704164652.0);
"""


def statements(script: str) -> list[str]:
    """The statements of a script (none of ours has a ';' inside a literal)."""
    return [part.strip() for part in script.split(";") if part.strip()]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def v2_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database exactly as version 2 of the app made it, with a sweep stored the old way."""
    if request.param == "sqlite":
        with sqlite3.connect(tmp_path / "v2.db") as conn:
            conn.executescript(V2_SQLITE_DDL + V2_ROWS)
        yield f"sqlite:///{tmp_path / 'v2.db'}"
        return
    server = request.getfixturevalue("postgres")  # the session's real server (or a skip)
    url = server.new_database()
    engine = make_engine(url)
    with engine.begin() as conn:
        for statement in statements(V2_POSTGRES_DDL + V2_ROWS):
            conn.exec_driver_sql(statement)
    engine.dispose()
    yield url
    server.drop_database(url)


def test_version_3_moves_sweep_results_from_epoch_to_layer(v2_url: str, tmp_path: Path) -> None:
    bench = Workbench(Settings(data_dir=tmp_path, models_cache=tmp_path / "m", db_url=v2_url))  # migrates
    with bench.db.engine.connect() as conn:
        assert (
            conn.execute(text("SELECT version FROM schema_version")).scalar() == migrations.current_version()
        )
        rows = conn.execute(text("SELECT job_id, step, epoch, layer, name FROM metrics ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [
        (1, 1, 1, None, "train_loss"),  # epoch curves keep their epoch
        (1, 2, 1, None, "eval_accuracy"),
        (2, 1, None, 0, "layer_accuracy"),  # a sweep's layer moved out of epoch
        (2, 1, None, 0, "layer_macro_f1"),
        (2, 2, None, 1, "layer_accuracy"),
        (2, 2, None, 1, "layer_macro_f1"),
        (2, 3, None, 2, "layer_accuracy"),
        (2, 3, None, 2, "layer_macro_f1"),
    ]
    sweep = bench.get_job(2, log_tail=0)["series"]
    assert sweep["layer_accuracy"] == [[0, 0.6], [1, 0.9], [2, 0.7]]
    assert sweep["layer_macro_f1"] == [[0, 0.55], [1, 0.88], [2, 0.66]]
    assert not sweep["eval_accuracy"]
    lora = bench.get_job(1, log_tail=0)["series"]
    assert lora["eval_accuracy"] == [[1, 0.8]] and not lora["layer_accuracy"]
    assert migrations.upgrade(bench.db.engine) == migrations.current_version()  # a second start: nothing
    # The upgraded table takes what a sweep writes now.
    reporter = JobReporter(bench.db, 2, JobLog(tmp_path / "job.log"))
    reporter.on_layer(LayerInfo(3, 4, 4, {"accuracy": 0.5, "macro_f1": 0.4}, train_loss=0.6))
    assert bench.get_job(2, log_tail=0)["series"]["layer_accuracy"][-1] == [3, 0.5]


def test_a_version_2_sqlite_file_upgrades_to_what_a_new_one_gets(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "v2.db") as conn:
        conn.executescript(V2_SQLITE_DDL + V2_ROWS)
    url, fresh = f"sqlite:///{tmp_path / 'v2.db'}", f"sqlite:///{tmp_path / 'new.db'}"
    Database(url)
    Database(fresh)
    assert columns(url) == columns(fresh)


def test_version_5_gives_every_earlier_run_its_task_and_score(v2_url: str, tmp_path: Path) -> None:
    """A database as version 4 (the last before tasks) left it: its runs are classification
    runs, and their score is their accuracy."""
    engine = make_engine(v2_url)
    assert migrations.upgrade(engine, migrations.MIGRATIONS[:3]) == 4
    with engine.connect() as conn:
        assert not {"task", "score"} & {c["name"] for c in inspect(conn).get_columns("jobs")}
    engine.dispose()
    bench = Workbench(Settings(data_dir=tmp_path, models_cache=tmp_path / "m", db_url=v2_url))  # migrates
    with bench.db.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, task, score, accuracy FROM jobs ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [(1, None, None, None), (2, None, 0.9, 0.9)]
    probe = bench.get_job(2, log_tail=0)
    assert (probe["task"], probe["primary_metric"], probe["score"]) == ("classification", "accuracy", 0.9)
    assert bench.get_job(1, log_tail=0)["score"] is None
    (row,) = [r for r in bench.compare([1, 2])["table"] if r["id"] == 2]
    assert (row["task"], row["score"]) == ("classification", 0.9)


def test_version_6_stores_every_earlier_runs_results_as_every_task_has_them(
    v2_url: str, tmp_path: Path
) -> None:
    """A database as version 5 left it, with a label run (its summary from before tasks) and a
    score run: version 6 fills their primary metric, interval, metrics and baseline from the
    summaries they stored, and the views read them."""
    engine = make_engine(v2_url)
    assert migrations.upgrade(engine, migrations.MIGRATIONS[:4]) == 5
    score_summary = {
        "task": "regression", "primary_metric": "spearman", "score": 0.81, "score_ci": [0.7, 0.88],
        "spearman": 0.81, "pearson": 0.79, "rmse": 0.9, "mae": 0.7,
        "baseline": {"mean": 2.5, "rmse": 1.4, "score": 0.0},
    }  # fmt: skip
    label_summary = {"accuracy": 0.9, "macro_f1": 0.85, "majority_baseline": {"label_id": 1, "accuracy": 0.6}}
    with engine.begin() as conn:
        jobs = Table(
            "jobs", MetaData(), Column("id", Integer), Column("task", String), Column("score", Float),
            Column("summary", JSON),
        )  # fmt: skip
        conn.execute(jobs.update().where(jobs.c.id == 2).values(summary=label_summary))
        conn.execute(
            jobs.update().where(jobs.c.id == 1).values(task="regression", score=0.81, summary=score_summary)
        )
    engine.dispose()
    bench = Workbench(Settings(data_dir=tmp_path, models_cache=tmp_path / "m", db_url=v2_url))  # migrates
    with bench.db.engine.connect() as conn:
        selected = "id, primary_metric, score_ci, metrics, baseline_name, baseline_score"
        query = f"SELECT {selected} FROM jobs ORDER BY id"
        rows = [tuple(r) for r in conn.execute(text(query)).all()]
    score_ci = [json.loads(v) if isinstance(v, str) else v for v in (rows[0][2], rows[1][2])]
    metrics = [json.loads(v) if isinstance(v, str) else v for v in (rows[0][3], rows[1][3])]
    assert rows[0][:2] == (1, "spearman") and score_ci[0] == [0.7, 0.88]
    assert metrics[0] == {"spearman": 0.81, "pearson": 0.79, "rmse": 0.9, "mae": 0.7}
    assert rows[0][4:] == ("always the training mean", 0.0)
    assert (
        rows[1][:2] == (2, "accuracy")
        and score_ci[1] is None
        and metrics[1] == {"accuracy": 0.9, "macro_f1": 0.85}
    )
    assert rows[1][4:] == ("always the majority class", 0.6)  # its baseline kept no "score": its accuracy
    row = next(r for r in bench.compare([1, 2])["table"] if r["id"] == 1)
    assert (row["primary_metric"], row["score_ci"]) == ("spearman", [0.7, 0.88])
