"""A service host of the tests' own: PostgreSQL and Redis started inside a network namespace
(`netns.lan`), listening on that host's address only, as a deployment's database and broker
machine would; other hosts reach them over the network, never through loopback.

PostgreSQL is a fresh cluster (`initdb`, run as the `postgres` user because initdb refuses
root) with trust authentication for the test network. Both are killed with the namespace.
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scrapeflow_dagster_tests.support.netns import PublicHost

REDIS_SERVER = "/usr/bin/redis-server"
POSTGRES_PORT, REDIS_PORT = 5432, 6379
START_TIMEOUT_SECONDS = 60


class ServiceMissing(Exception):
    """A binary or user the service host needs is not on this machine (the message says which)."""


def _postgres_bin(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        found = next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None)
    if found is None:
        raise ServiceMissing(f"PostgreSQL's {name} is not installed")
    return found


def _as_postgres() -> list[str]:
    """The prefix that runs a command as the `postgres` user (initdb and the server refuse
    root), keeping the environment."""
    try:
        pwd.getpwnam("postgres")
    except KeyError as error:
        raise ServiceMissing("there is no postgres user to run initdb as") from error
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


def _stop(proc: "subprocess.Popen[str]", sig: signal.Signals) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_for_port(address: str, port: int, what: str, proc: "subprocess.Popen[str]") -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            pass
        assert proc.poll() is None, f"{what} exited with {proc.returncode}"
        assert time.monotonic() < deadline, f"{what} did not listen on {address}:{port}"
        time.sleep(0.1)


@contextmanager
def postgres_on(host: PublicHost, *, database: str = "dagster") -> Iterator[str]:
    """A PostgreSQL cluster of its own on `host`'s address (port 5432), with `database` made;
    yields that database's `postgresql+psycopg2://` URL. Durability is off (fsync): the test
    loses worker hosts, never this one.

    Raises:
        ServiceMissing: initdb, postgres or the postgres user is missing.
    """
    initdb, server, createdb = (_postgres_bin(n) for n in ("initdb", "postgres", "createdb"))
    as_postgres = _as_postgres()
    user = pwd.getpwnam("postgres")
    # Under /tmp, not the test's tmp_path: the postgres user cannot enter root's 0700 folders.
    root = Path(tempfile.mkdtemp(prefix="scrapeflow-pg-"))
    try:
        os.chown(root, user.pw_uid, user.pw_gid)
        data, sockets = root / "data", root / "sockets"
        subprocess.run(
            [*as_postgres, "mkdir", str(sockets)], check=True, capture_output=True, text=True
        )
        done = subprocess.run(
            [*as_postgres, initdb, "-D", str(data), "-U", "postgres", "-A", "trust",
             "--no-sync", "--no-locale", "-E", "UTF8"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, f"initdb failed:\n{done.stdout}\n{done.stderr}"
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 11.0.0.0/8 trust\n")  # the test network only
        with (root / "postgres.log").open("w") as log:
            proc = host.start(
                [*as_postgres, server, "-D", str(data), "-h", host.address,
                 "-p", str(POSTGRES_PORT), "-k", str(sockets), "-c", "fsync=off",
                 "-c", "synchronous_commit=off", "-c", "max_connections=300"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            _wait_for_port(host.address, POSTGRES_PORT, "postgres on the service host", proc)
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while True:  # listening is not accepting yet: createdb until the server answers
                done = subprocess.run(
                    [createdb, "-h", host.address, "-p", str(POSTGRES_PORT), "-U", "postgres",
                     database],
                    capture_output=True, text=True,
                )  # fmt: skip
                if done.returncode == 0:
                    break
                assert time.monotonic() < deadline, f"createdb failed: {done.stderr}"
                time.sleep(0.2)
            yield f"postgresql+psycopg2://postgres@{host.address}:{POSTGRES_PORT}/{database}"
        finally:
            _stop(proc, signal.SIGINT)  # Postgres's fast shutdown: clients are cut off
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def redis_on(host: PublicHost, workdir: Path, *, db: int = 0) -> Iterator[str]:
    """A redis-server of its own on `host`'s address (port 6379, nothing persisted); yields
    the `redis://` URL of database `db`.

    Raises:
        ServiceMissing: redis-server is missing.
    """
    if not os.access(REDIS_SERVER, os.X_OK):
        raise ServiceMissing(f"redis-server is not installed ({REDIS_SERVER})")
    workdir.mkdir(parents=True, exist_ok=True)
    proc = host.start(
        [REDIS_SERVER, "--bind", host.address, "--port", str(REDIS_PORT),
         "--protected-mode", "no", "--save", "", "--appendonly", "no",
         "--dir", str(workdir), "--logfile", str(workdir / "redis.log")],
    )  # fmt: skip
    try:
        _wait_for_port(host.address, REDIS_PORT, "redis-server on the service host", proc)
        yield f"redis://{host.address}:{REDIS_PORT}/{db}"
    finally:
        _stop(proc, signal.SIGTERM)
