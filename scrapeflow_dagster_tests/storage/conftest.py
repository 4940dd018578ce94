"""The storage tests' shared fixtures: fresh PostgreSQL databases for the Postgres homes."""

from scrapeflow_dagster_tests.support.postgres import postgres  # noqa: F401
