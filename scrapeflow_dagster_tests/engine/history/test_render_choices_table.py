"""`render_choices`: each URL pattern's `render: auto` judgement and evidence, taken in from the
`render` outputs a run's Ledger spools (newest wins), and published beside DuckDB for runs to
read while a writer holds the database."""

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from scrapeflow_dagster.engine.history import Ledger, sync_spool
from scrapeflow_dagster.engine.history.recording.render_choices import snapshot_path
from scrapeflow_dagster.engine.history.recording.rows import OutputRow
from scrapeflow_dagster.engine.render.choice import SAMPLE_PAGES, Known, Parsed, RenderChoices
from scrapeflow_dagster.engine.render.choice_store import load_known, snapshot_of
from scrapeflow_dagster_tests.engine.history.helpers import query

T0 = datetime(2026, 12, 6, 12, 0, 0)
BODY = Parsed(frozenset({"/a"}), 1000)
DOM = Parsed(frozenset({"/a", "/b"}), 1000)


def _judged(url: str, *, needed: bool) -> dict[str, Any]:
    """A run's evidence of `url`'s pattern after its samples, as its outputs carry it."""
    choices = RenderChoices()
    for _ in range(SAMPLE_PAGES):
        choices.learn(url, BODY, DOM if needed else BODY)
    return choices.evidence(url)


def _record(ledger: Ledger, key: str, url: str, evidence: dict[str, Any], minute: int) -> None:
    output = {"rendered": True, "choice": "a sample", "pattern": evidence}
    ended = T0 + timedelta(minutes=minute)
    ledger.record_output(OutputRow.of(key, "render", output, url=url, ended_at=ended))


def test_each_pattern_has_one_row_of_its_newest_evidence_with_typed_columns(
    db_path: Path,
) -> None:
    shell, plain = "http://shop.test/app/item/1", "http://shop.test/page/1"
    with Ledger(db_path, run_id="run-1") as ledger:
        _record(ledger, "item1", shell, _judged(shell, needed=True), 1)
        _record(ledger, "page1", plain, _judged(plain, needed=False), 2)
        # Another executor's output, and a page not marked `auto`: no row.
        ledger.record_output(OutputRow.of("page1", "scrape", {"size": 3}, url=plain, ended_at=T0))
        ledger.record_output(
            OutputRow.of("page2", "render", {"rendered": False}, url=plain, ended_at=T0)
        )

    columns = query(
        db_path,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'render_choices' ORDER BY ordinal_position",
    )
    assert columns == [
        ("pattern", "VARCHAR"),
        ("judgement", "VARCHAR"),
        ("pages_sampled", "INTEGER"),
        ("pages_browser_needed", "INTEGER"),
        ("pages_seen", "BIGINT"),
        ("checked_at", "TIMESTAMP"),
        ("checked_by", "VARCHAR"),
        ("updated_at", "TIMESTAMP"),
        ("run_id", "VARCHAR"),
    ]
    rows = query(
        db_path,
        "SELECT pattern, judgement, pages_sampled, pages_browser_needed, pages_seen, "
        "checked_by, updated_at, run_id, checked_at IS NOT NULL FROM render_choices "
        "ORDER BY pattern",
    )
    assert rows == [
        ("shop.test/app/item/*", "browser", 3, 3, 0, "run-1", T0 + timedelta(minutes=1), "run-1",
         True),
        ("shop.test/page/*", "static", 3, 0, 0, "run-1", T0 + timedelta(minutes=2), "run-1",
         True),
    ]  # fmt: skip

    # A later run's evidence (its counts grown from these) replaces it. Another shard's, which
    # found the shell pattern static on its own pages, adds its count and keeps `browser`.
    later = {**_judged(plain, needed=False), "pages_seen": 30, "checked_by": "run-1"}
    with Ledger(db_path, run_id="run-2") as ledger:
        _record(ledger, "page3", plain, later, 9)
        _record(ledger, "item3", shell, {**_judged(shell, needed=False), "pages_seen": 99}, 0)
    after = query(
        db_path,
        "SELECT pattern, judgement, pages_browser_needed, pages_seen, checked_by, run_id "
        "FROM render_choices",
    )
    assert sorted(after) == [
        ("shop.test/app/item/*", "browser", 3, 99, "run-2", "run-1"),
        ("shop.test/page/*", "static", 0, 30, "run-1", "run-2"),  # checked in run 1
    ]


def test_runs_read_the_published_choices_while_a_writer_holds_duckdb(
    tmp_path: Path, hold_database: Any
) -> None:
    db_path = tmp_path / "scrapeflow.duckdb"
    shell = "http://shop.test/app/item/1"
    with Ledger(db_path, run_id="run-1") as ledger:
        _record(ledger, "item1", shell, _judged(shell, needed=True), 1)
    assert snapshot_path(db_path).is_file()

    holder = hold_database(db_path, "rw")  # another shard's sync, say
    started = time.monotonic()
    known = load_known(snapshot_of(tmp_path / "status"))
    waited = time.monotonic() - started
    holder.stdin.close()
    holder.wait()

    assert waited < 0.5
    [(pattern, evidence)] = known.items()
    assert pattern == "shop.test/app/item/*"
    assert evidence._replace(checked_at=None) == Known(3, 3, 0, None, "run-1")


def test_a_database_started_over_forgets_the_published_choices(tmp_path: Path) -> None:
    db_path = tmp_path / "scrapeflow.duckdb"
    shell = "http://shop.test/app/item/1"
    with Ledger(db_path, run_id="run-1") as ledger:
        _record(ledger, "item1", shell, _judged(shell, needed=True), 1)
    assert load_known(snapshot_of(tmp_path / "status"))

    db_path.rename(tmp_path / "aside.duckdb")
    assert sync_spool(db_path).locked is False
    assert not snapshot_path(db_path).exists()
    assert load_known(snapshot_of(tmp_path / "status")) == {}
