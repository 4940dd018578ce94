"""Applying a planned batch: its tasks stored, its rows recorded, its parents marked."""

import dataclasses
from datetime import datetime

from scrapeflow_dagster.engine.crawl.frontier.batches import (
    FrontierBatch,
    batch_path,
    finish_batch,
    save_batch,
)
from scrapeflow_dagster.engine.crawl.frontier.expanded_and_added import mark_expanded, note_added
from scrapeflow_dagster.engine.crawl.scope import ADDED, KNOWN
from scrapeflow_dagster.engine.history import FrontierRow, Ledger
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.schema import parse_stamp, utc_now
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import TaskSpec


def apply_batch(layout: DataLayout, batch: FrontierBatch, ledger: Ledger, listed: set[str]) -> None:
    """Store the batch's tasks, spool its rows, note the crawl sizes and mark its parents;
    each part is idempotent, so a batch applied twice (after a kill) changes nothing more."""
    path = batch_path(layout, batch.id)
    specs = [
        TaskSpec(child["key"], child["params"], path, line)
        for line, child in enumerate(batch.children, start=1)
    ]
    # One listing of the status folder (the caller's, `listed`) rather than a lookup per new
    # task; a key another process stores after it is still never overwritten (`add_tasks`
    # only creates files).
    report = add_tasks(layout, specs, ledger=ledger, stored_keys=set(listed))
    stored = set(report.keys)
    crawl_of = {child["key"]: child["params"]["crawl"] for child in batch.children}
    stamps: dict[str, datetime] = {}  # a batch's rows share one time: parsed once
    for row in batch.rows:
        if row["outcome"] == ADDED and row["child"] not in stored:
            row["outcome"] = KNOWN  # another process stored that key first
        when = row["discovered_at"]
        if when not in stamps:
            stamps[when] = parse_stamp(when) or utc_now()
        ledger.record_frontier(
            FrontierRow(
                crawl=row["crawl"],
                parent=row["parent"],
                url=row["url"],
                canonical=row.get("canonical"),  # batches journaled before it lack it
                depth=row["depth"],
                outcome=row["outcome"],
                child=row["child"],
                discovered_at=stamps[when],
            )
        )
    ledger.flush()
    batch.outcomes = {}
    for row in batch.rows:
        counts = batch.outcomes.setdefault(str(row["depth"]), {})
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    note_added(layout, ((crawl_of[key], key) for key in report.keys))
    mark_expanded(layout, batch.parents)
    batch.keys = list(report.keys)
    batch.applied = True
    if not batch.keys:
        finish_batch(layout, batch.id)
        return
    # Kept for the driver, which finishes it: it needs the keys, no longer what was planned.
    applied = dataclasses.replace(batch, children=[], rows=[])
    save_batch(layout, applied)
