"""Fixtures of the scale-out tests: temp homes (SQLite, or a Postgres database of their own),
the bundled site, tasks stored and added as partitions, and Redis for Celery (a database of the
machine's Redis, or a redis-server of the test's own that it may kill: `redis_server`)."""

import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster_tests.scaleout.helpers import (
    POSTGRES_ADMIN_URL,
    REDIS_HOST,
    REDIS_PORT,
    service_missing,
)
from scrapeflow_dagster_tests.support.processes import init_dagster_home
from scrapeflow_dagster_tests.support.redis import redis_server  # noqa: F401  (a fixture)

for _category in (dg.BetaWarning, dg.PreviewWarning):  # the asset decorators' beta notices
    warnings.filterwarnings("ignore", category=_category)

# The Redis database the Celery tests own (flushed before each): other users of this Redis keep
# to database 0. Each pytest-xdist worker (`gw0`, `gw1`, ...) gets its own, so two Celery tests
# running at once never share a queue.
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
CELERY_REDIS_DB = 11 + int(_XDIST_WORKER.removeprefix("gw") or 0)


@pytest.fixture
def layout(tmp_path: Path) -> DataLayout:
    """A fresh data folder."""
    return DataLayout(tmp_path / "data").ensure()


@pytest.fixture
def sqlite_home(tmp_path: Path) -> Path:
    """A temp `DAGSTER_HOME` as `scrapeflow home init` writes it (SQLite, batched events)."""
    return init_dagster_home(tmp_path / "dagster_home")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A Postgres database of this test's own on 127.0.0.1:5432 (dropped afterwards)."""
    try:
        import psycopg2
    except ImportError:
        service_missing("psycopg2 is not installed")
    name = f"sfshard_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg2.connect(POSTGRES_ADMIN_URL, connect_timeout=3)
    except psycopg2.OperationalError as error:
        service_missing(f"PostgreSQL is not reachable at 127.0.0.1:5432 as postgres: {error}")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture
def postgres_home(tmp_path: Path, postgres_url: str) -> Path:
    """A temp `DAGSTER_HOME` whose runs, events and schedules live in `postgres_url`."""
    home = tmp_path / "dagster_home_pg"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        f"telemetry:\n  enabled: false\nstorage:\n  postgres:\n    postgres_url: {postgres_url}\n"
    )
    return home


@pytest.fixture
def redis_broker() -> str:
    """The URL of this test's own Redis database on 127.0.0.1:6379, emptied first."""
    try:
        import redis
    except ImportError:
        service_missing("the redis client is not installed")
    client = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=CELERY_REDIS_DB, socket_timeout=3)
    try:
        client.flushdb()
    except redis.exceptions.ConnectionError as error:
        service_missing(f"Redis is not reachable at {REDIS_HOST}:{REDIS_PORT}: {error}")
    finally:
        client.close()
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{CELERY_REDIS_DB}"
