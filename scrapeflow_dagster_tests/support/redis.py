"""A Redis server of one test's own: `/usr/bin/redis-server` on a free port of 127.0.0.1 with
its data in a temp folder, persisted as a production broker should be (append-only file, fsync
on every write, no RDB snapshots), that the test can kill and start again on the same port and
data.

`redis_server` (fixture) skips when the binary is missing, saying so, unless
`SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where that is a failure. Use it from a test module or
conftest with `from scrapeflow_dagster_tests.support.redis import redis_server  # noqa: F401`.
"""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapeflow_dagster_tests.support.ports import free_port

REDIS_SERVER = Path("/usr/bin/redis-server")
REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"
NOT_INSTALLED = f"redis-server not installed ({REDIS_SERVER})"
START_TIMEOUT_SECONDS = 20


class RedisServer:
    """One redis-server process at a time on a fixed port and data folder.

    Args:
        data_dir: its working folder (the append-only files and its log).
        port: the TCP port on 127.0.0.1 it listens on.
        appendfsync: `always` (every write on disk before Redis answers) or `everysec`.
    """

    def __init__(self, data_dir: Path, *, port: int, appendfsync: str = "always") -> None:
        self.data_dir = data_dir
        self.port = port
        self.appendfsync = appendfsync
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def url(self, db: int = 0) -> str:
        """The `redis://` URL of database `db`."""
        return f"redis://127.0.0.1:{self.port}/{db}"

    def command(self) -> list[str]:
        """Its command line: AOF on, fsync per `appendfsync`, RDB snapshots off (`--save ""`),
        loopback only."""
        return [
            str(REDIS_SERVER),
            *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir)),
            *("--appendonly", "yes", "--appendfsync", self.appendfsync, "--save", ""),
            *("--daemonize", "no", "--logfile", str(self.log_path)),
        ]

    @property
    def log_path(self) -> Path:
        return self.data_dir / "redis.log"

    def start(self) -> None:
        """Start it and wait until it answers PING (having loaded its append-only file).

        Raises:
            AssertionError: it exited or did not answer within `START_TIMEOUT_SECONDS`.
        """
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(self.command(), start_new_session=True)
        self.starts += 1
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self.answers_ping():
            assert self.proc.poll() is None, f"redis-server exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"redis-server did not start:\n{self.log_tail()}"
            time.sleep(0.05)

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        """Send `sig` (default SIGKILL: a crash, nothing flushed at exit) and reap it."""
        assert self.proc is not None and self.proc.poll() is None, "not running"
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM it if it runs (Redis's clean shutdown), SIGKILL after 10 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def answers_ping(self) -> bool:
        """Whether it answers PING with PONG now (a raw RESP exchange: no client needed)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text()[-chars:] if self.log_path.exists() else ""


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A running Redis of this test's own (AOF, fsync always); skips (fails under
    SCRAPEFLOW_REQUIRE_SERVICES=1) when `/usr/bin/redis-server` is missing."""
    if not os.access(REDIS_SERVER, os.X_OK):
        if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
            pytest.fail(f"{NOT_INSTALLED} ({REQUIRE_SERVICES_ENV}=1)")
        pytest.skip(NOT_INSTALLED)
    server = RedisServer(tmp_path / "redis", port=free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()
