"""`scrapeflow home init --postgres` through the real CLI, on a fresh Postgres database."""

from pathlib import Path

import dagster as dg
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage

from scrapeflow_dagster.broker import HOME_RECORD, record_broker, recorded_broker
from scrapeflow_dagster.lib.partitions import tasks_partitions_def
from scrapeflow_dagster.storage.postgres.event_log import BatchedPostgresEventLogStorage
from scrapeflow_dagster_tests.cli.helpers import Run, add_through_the_cli
from scrapeflow_dagster_tests.support.postgres import (  # noqa: F401
    PostgresServer,
    postgres,
)


def test_home_init_postgres_writes_a_home_the_commands_use(
    run_command: Run,
    dagster_home: Path,
    tmp_path: Path,
    postgres: PostgresServer,  # noqa: F811
) -> None:
    url = postgres.database("home_init")
    plain = url.replace("postgresql+psycopg2://", "postgresql://")
    config = dagster_home / "dagster.yaml"
    embedded = config.read_text()  # the fixture's home: what `scrapeflow home init` writes

    refused = run_command("scrapeflow", "home", "init", "--postgres", plain)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert config.read_text() == embedded

    done = run_command(
        "scrapeflow", "home", "init", "--postgres", plain, "--max-concurrent-runs", "3", "--force"
    )

    assert done.returncode == 0, done.stderr
    assert "postgresql+psycopg2://" in done.stdout  # says it converted the plain URL
    assert "Postgres" in done.stdout
    text = config.read_text()
    assert text.count(f'postgres_url: "{url}"') == 3  # runs, events, schedules
    assert plain not in text
    again = run_command(
        "scrapeflow", "home", "init", "--postgres", url, "--max-concurrent-runs", "3"
    )
    assert again.returncode == 0, again.stderr  # the same file: nothing to refuse

    # A command of the CLI writes through it: the task keys become partitions in Postgres.
    keys = add_through_the_cli(run_command, tmp_path, [("home-1", "http://127.0.0.1:9/a")])
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, BatchedPostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, QueuedRunCoordinator)
        assert coordinator.get_run_queue_config().max_concurrent_runs == 3
        assert instance.get_dynamic_partitions(tasks_partitions_def.name or "") == keys


def test_home_init_refuses_a_url_that_is_not_postgres_without_showing_its_password(
    run_command: Run, dagster_home: Path
) -> None:
    before = (dagster_home / "dagster.yaml").read_text()

    done = run_command("scrapeflow", "home", "init", "--postgres", "mysql://me:s3cret@db/x")
    no_scheme = run_command("scrapeflow", "home", "init", "--postgres", "me:s3cret@db:5432/x")
    bad_port = run_command(
        "scrapeflow", "home", "init", "--postgres", "postgresql://me:s3cret@db:notaport/x"
    )

    assert done.returncode == 2
    assert "mysql://db/x" in done.stderr and "s3cret" not in done.stderr
    assert no_scheme.returncode == 2 and "'db:5432/x'" in no_scheme.stderr
    assert bad_port.returncode == 2 and "the port of 'postgresql://db:notaport/x'" in (
        bad_port.stderr
    )
    assert "s3cret" not in no_scheme.stderr + bad_port.stderr
    assert (dagster_home / "dagster.yaml").read_text() == before


def test_home_init_celery_broker_needs_postgres_and_a_redis_url(
    run_command: Run, dagster_home: Path, tmp_path: Path
) -> None:
    before = (dagster_home / "dagster.yaml").read_text()

    alone = run_command("scrapeflow", "home", "init", "--celery-broker", "redis://127.0.0.1:6379/0")
    amqp = run_command(
        "scrapeflow",
        "home",
        "init",
        "--postgres",
        "postgresql+psycopg2://postgres@127.0.0.1:5432/x",
        "--celery-broker",
        "amqp://me:s3cret@127.0.0.1//",
    )

    assert alone.returncode == 2 and "needs a Postgres home" in alone.stderr
    assert amqp.returncode == 2 and "only Redis brokers" in amqp.stderr
    assert "s3cret" not in amqp.stderr
    assert (dagster_home / "dagster.yaml").read_text() == before
    assert not (tmp_path / ".env").exists()


def test_home_init_celery_broker_records_the_broker_in_the_home_not_in_the_folder(
    run_command: Run,
    dagster_home: Path,
    tmp_path: Path,
    postgres: PostgresServer,  # noqa: F811
) -> None:
    # An earlier version wrote the broker to ./.env: the line goes, the home decides.
    (tmp_path / ".env").write_text("OTHER=kept\nSCRAPEFLOW_CELERY_BROKER=redis://old:6379/0\n")
    url = postgres.database("home_init_celery")

    done = run_command(
        "scrapeflow", "home", "init", "--force", "--postgres", url,
        "--celery-broker", "redis://:s3cret@127.0.0.1:6379/5",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert recorded_broker(dagster_home) == "redis://:s3cret@127.0.0.1:6379/5"
    assert (dagster_home / HOME_RECORD).stat().st_mode & 0o777 == 0o600
    assert (tmp_path / ".env").read_text() == "OTHER=kept\n"
    assert "s3cret" not in done.stdout + done.stderr


def test_a_home_whose_url_holds_a_password_is_readable_by_its_owner_only(
    dagster_home: Path,
) -> None:
    from scrapeflow_dagster.instance import init_dagster_home

    init_dagster_home(force=True, postgres="postgresql+psycopg2://me:s3cret@127.0.0.1:5432/x")
    assert (dagster_home / "dagster.yaml").stat().st_mode & 0o777 == 0o600


def test_the_worker_takes_the_broker_the_home_records(
    run_command: Run, dagster_home: Path, tmp_path: Path
) -> None:
    no_broker = run_command("scrapeflow", "worker")
    (tmp_path / ".env").write_text("SCRAPEFLOW_CELERY_BROKER=redis://127.0.0.1:6379/0\n")
    still_none = run_command("scrapeflow", "worker")  # a .env line is not the home's broker
    record_broker(dagster_home, "amqp://me:s3cret@mq//")

    from_home = run_command("scrapeflow", "worker")

    assert no_broker.returncode == 2 and "worker: no broker" in no_broker.stderr
    assert still_none.returncode == 2 and "worker: no broker" in still_none.stderr
    # The broker came from the home (refused only for being AMQP), its password never shown.
    assert from_home.returncode == 2 and "'amqp://***@mq//': only Redis" in from_home.stderr
