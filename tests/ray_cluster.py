"""A real local Ray cluster for the tests: a head and one worker node, each its own
``ray start --block`` process (so one node can be killed alone), on free ports.

The head offers no CPUs: every job lands on the worker node, so a test knows which node
to kill, and :meth:`RayCluster.add_worker` brings a fresh node for the jobs after that.
Health checks are fast (a dead node is noticed in seconds, not the default ~30 s).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
WORKER_CPUS = 2
# GCS notices a dead node after 3 missed checks 0.5 s apart (the default is 5 x 3 s).
FAST_HEALTH = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports (held open together so none repeats)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def why_unavailable() -> str | None:
    """None if Ray can run here, else the reason the Ray tests skip."""
    if not Path(RAY).exists():
        return f"the ray command is not installed next to {sys.executable} (pip install 'ray[default]')"
    return None


class RayCluster:
    """A running head (``dashboard_url`` for the Jobs API) and its worker nodes."""

    def __init__(self) -> None:
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: socket paths
        self.gcs_port, self.dashboard_port = free_ports(2)
        self.dashboard_url = f"http://127.0.0.1:{self.dashboard_port}"
        self.nodes: list[subprocess.Popen[bytes]] = []
        # The jobs' `python` is this interpreter: its folder first on the nodes' PATH.
        self.env = {
            **os.environ,
            **FAST_HEALTH,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "RAY_USAGE_STATS_ENABLED": "0",
        }

    def _node(self, *args: str, name: str) -> subprocess.Popen[bytes]:
        node_manager, object_manager, agent_grpc, agent_http, runtime_env, metrics = free_ports(6)
        low = free_ports(1)[0]
        log = (self.temp_dir / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            [
                RAY, "start", "--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1",
                "--node-manager-port", str(node_manager), "--object-manager-port", str(object_manager),
                "--dashboard-agent-grpc-port", str(agent_grpc),
                "--dashboard-agent-listen-port", str(agent_http),
                "--runtime-env-agent-port", str(runtime_env), "--metrics-export-port", str(metrics),
                "--min-worker-port", str(low), "--max-worker-port", str(low + 200),
                "--object-store-memory", str(100 * 1024 * 1024), *args,
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: killing the node takes raylet and workers
        )  # fmt: skip
        self.nodes.append(proc)
        return proc

    def start(self, attempts: int = 2) -> RayCluster:
        """The head, then one worker node. A head whose freshly chosen ports were taken
        meanwhile exits (seen once in CI): it is started again on new ports."""
        for attempt in range(attempts):
            client_port = free_ports(1)[0]
            head = self._node(
                "--head", "--port", str(self.gcs_port), "--num-cpus", "0", "--temp-dir", str(self.temp_dir),
                "--include-dashboard", "true", "--dashboard-host", "127.0.0.1",
                "--dashboard-port", str(self.dashboard_port), "--ray-client-server-port", str(client_port),
                name="head",
            )  # fmt: skip
            if self._wait_dashboard(head):
                break
            self.kill_node(head)
            self.nodes.remove(head)
            if attempt == attempts - 1:
                raise RuntimeError(f"ray start --head exited; its output ends:\n{self._log_tail('head')}")
            self.gcs_port, self.dashboard_port = free_ports(2)
            self.dashboard_url = f"http://127.0.0.1:{self.dashboard_port}"
        self.add_worker()
        return self

    def add_worker(self, attempts: int = 2) -> subprocess.Popen[bytes]:
        """One more node with WORKER_CPUS CPUs; returns once the cluster counts its CPUs.

        A node whose freshly chosen ports were taken meanwhile exits: it is started again."""
        before = self.cpus()
        for attempt in range(attempts):
            name = f"worker-{len(self.nodes)}"
            address = f"127.0.0.1:{self.gcs_port}"
            node = self._node("--address", address, "--num-cpus", str(WORKER_CPUS), name=name)
            deadline = time.monotonic() + 120
            while self.cpus() < before + WORKER_CPUS:
                if node.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            else:
                return node
            self.kill_node(node)
            self.nodes.remove(node)
            if attempt == attempts - 1:
                raise RuntimeError(
                    f"the Ray worker node did not join; its output ends:\n{self._log_tail(name)}"
                )
        raise AssertionError("unreachable")

    def cpus(self) -> float:
        from ray.util.state import list_nodes

        nodes = list_nodes(address=self.dashboard_url, limit=1000)  # dead ones too: see RayRunner
        return sum(float((n.resources_total or {}).get("CPU", 0)) for n in nodes if n.state == "ALIVE")

    def kill_node(self, node: subprocess.Popen[bytes]) -> None:
        """SIGKILL the node's whole process group, as a machine that loses power."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)
        node.wait(10)

    def _wait_dashboard(self, head: subprocess.Popen[bytes]) -> bool:
        """True once the dashboard answers; False if the head exited first."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if head.poll() is not None:
                return False
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.dashboard_url}/api/version", timeout=2).close()
                return True
            time.sleep(0.5)
        raise RuntimeError(f"the Ray dashboard did not come up; its output ends:\n{self._log_tail('head')}")

    def _log_tail(self, name: str) -> str:
        # The temp folder is removed at stop, so the error carries the log's end itself.
        return (self.temp_dir / f"{name}.log").read_text(errors="replace")[-1500:]

    def stop(self) -> None:
        for node in reversed(self.nodes):  # workers first, then the head
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, signal.SIGTERM)
        for node in self.nodes:
            try:
                node.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(node.pid, signal.SIGKILL)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@contextlib.contextmanager
def running_cluster() -> Iterator[RayCluster]:
    cluster = RayCluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()
