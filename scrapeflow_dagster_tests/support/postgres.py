"""Fresh PostgreSQL databases on the server at 127.0.0.1:5432 for one test session.

`postgres` (session fixture) checks the server once, then hands out databases named after the
session (`scrapeflow_test_<pid>_<hex>_<name>`), all dropped when the session ends. Without a
server the tests that use it skip, saying so, unless `SCRAPEFLOW_REQUIRE_SERVICES=1` (CI), where
a missing server is a failure. Use it from a test module or conftest with
`from scrapeflow_dagster_tests.support.postgres import postgres  # noqa: F401`.
"""

import os
import secrets
from collections.abc import Iterator
from contextlib import closing

import pytest

try:
    import psycopg2
    from psycopg2 import sql
except ImportError:  # without the [postgres] extra (`make compat`): the fixture skips
    psycopg2 = None  # type: ignore[assignment]

HOST, PORT, USER = "127.0.0.1", 5432, "postgres"
REQUIRE_SERVICES_ENV = "SCRAPEFLOW_REQUIRE_SERVICES"
NOT_REACHABLE = f"PostgreSQL not reachable on {HOST}:{PORT}"
CONNECT_TIMEOUT_SECONDS = 3


def server_url(database: str, *, driver: str = "postgresql+psycopg2") -> str:
    """The SQLAlchemy URL of `database` on the test server (trust auth, user postgres)."""
    return f"{driver}://{USER}@{HOST}:{PORT}/{database}"


class PostgresServer:
    """The test server: creates databases for this session and drops them at its end."""

    def __init__(self) -> None:
        self.prefix = f"scrapeflow_test_{os.getpid()}_{secrets.token_hex(3)}"
        self.created: list[str] = []

    def _admin(self):  # type: ignore[no-untyped-def]
        conn = psycopg2.connect(
            host=HOST,
            port=PORT,
            user=USER,
            dbname="postgres",
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
        )
        conn.autocommit = True  # CREATE / DROP DATABASE refuse to run in a transaction
        return conn

    def database(self, name: str) -> str:
        """A new empty database for this session; returns its `postgresql+psycopg2` URL."""
        database = f"{self.prefix}_{name}"
        with closing(self._admin()) as conn, conn.cursor() as cursor:
            cursor.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
        self.created.append(database)
        return server_url(database)

    def drop_all(self) -> None:
        """Drop every database of this session, closing what still holds them."""
        with closing(self._admin()) as conn, conn.cursor() as cursor:
            for database in self.created:
                cursor.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        sql.Identifier(database)
                    )
                )
        self.created.clear()


def _reachable() -> bool:
    try:
        PostgresServer()._admin().close()
    except psycopg2.OperationalError:
        return False
    return True


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """The PostgreSQL test server; skips (fails under SCRAPEFLOW_REQUIRE_SERVICES=1) without it.

    Skips without psycopg2 whatever the services: the [postgres] extra is not installed (the
    `make compat` venv of a Dagster version that dagster-postgres has no release for).
    """
    if psycopg2 is None:
        pytest.skip("psycopg2 is not installed (the [postgres] extra)")
    if not _reachable():
        if os.environ.get(REQUIRE_SERVICES_ENV) == "1":
            pytest.fail(f"{NOT_REACHABLE} ({REQUIRE_SERVICES_ENV}=1)")
        pytest.skip(NOT_REACHABLE)
    server = PostgresServer()
    yield server
    server.drop_all()
