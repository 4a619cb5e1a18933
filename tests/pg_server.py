"""A real PostgreSQL server for the tests: Debian's binaries, a fresh cluster in a temporary
folder, on a free port, for one test session (``make postgres`` installs them).

PostgreSQL refuses to run as root, and CI runs as root: there the server runs as the
``postgres`` user the Debian package creates (through ``runuser``). Connections use TCP on
127.0.0.1 with ``trust`` authentication: the cluster lives only as long as the session.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

USER = "workbench"


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return versions[-1] if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def why_unavailable() -> str | None:
    """None if a server can be started here, else the reason the PostgreSQL tests skip."""
    if _bin("initdb") is None or _bin("pg_ctl") is None:
        return "PostgreSQL's initdb/pg_ctl are not installed (make postgres installs them)"
    if os.geteuid() == 0 and (shutil.which("runuser") is None or _user_missing("postgres")):
        return "running as root without a 'postgres' user to run the server as"
    return None


def _user_missing(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return True
    return False


class PostgresServer:
    """One running cluster; :meth:`new_database` gives each test its own empty database."""

    def __init__(self, folder: Path, port: int) -> None:
        self.folder = folder
        self.port = port
        self._count = 0

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{database}"

    def admin(self) -> object:
        import psycopg

        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=USER, dbname="postgres", autocommit=True
        )

    def new_database(self) -> str:
        """An empty database of its own; its SQLAlchemy URL."""
        self._count += 1
        name = f"wb_{os.getpid()}_{self._count}"
        with self.admin() as conn:  # type: ignore[attr-defined]
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a test's database, cutting any connection a killed worker left behind."""
        name = url.rsplit("/", 1)[1]
        with self.admin() as conn:  # type: ignore[attr-defined]
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(args: list[str], as_postgres: bool) -> None:
    command = ["runuser", "-u", "postgres", "--", *args] if as_postgres else args
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    """Start a throwaway cluster; stop it and delete its folder afterwards."""
    as_postgres = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    data = folder / "data"
    port = _free_port()
    if as_postgres:
        shutil.chown(folder, "postgres", "postgres")
    _run(
        [str(_bin("initdb")), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
        as_postgres,
    )
    # Small and quick: fsync off (a test cluster), TCP on loopback only, sockets in the folder.
    options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off -c max_connections=200"
    log = folder / "server.log"
    _run(
        [str(_bin("pg_ctl")), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
        as_postgres,
    )
    try:
        yield PostgresServer(folder, port)
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            _run([str(_bin("pg_ctl")), "-D", str(data), "-m", "immediate", "-w", "stop"], as_postgres)
        shutil.rmtree(folder, ignore_errors=True)


def wait_connectable(server: PostgresServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.admin().close()  # type: ignore[attr-defined]
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
