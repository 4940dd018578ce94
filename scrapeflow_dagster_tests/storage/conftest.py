"""The storage tests' shared fixtures: fresh PostgreSQL databases for the Postgres homes, and
a batched SQLite event log storage in a temp folder (`storage`; `test_postgres_batched` has a
Postgres one of the same name)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapeflow_dagster.storage.sqlite.event_log import BatchedSqliteEventLogStorage
from scrapeflow_dagster_tests.support.postgres import postgres  # noqa: F401


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[BatchedSqliteEventLogStorage]:
    batched = BatchedSqliteEventLogStorage(str(tmp_path / "runs"), max_buffered_events=4)
    yield batched
    batched.dispose()
