"""Schema versioning: a database made by the first schema version still opens.

``V1_DDL`` is a frozen copy of what version 1 wrote to disk. It must never change:
it stands for the databases users already have.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from backend.errors import ConfigError
from backend.settings import Settings
from jobs import migrations
from jobs.db import Database, make_engine
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
        assert conn.execute(text("SELECT version FROM schema_version")).scalar() == 2
        assert conn.execute(text("SELECT id, gpu FROM jobs ORDER BY id")).all() == [(1, None), (2, None)]
