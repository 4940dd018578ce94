"""`render: auto` starting from what earlier runs learned (`RenderChoices.restore_once`, the
published file `choice_store` reads): a pattern known to need a browser is rendered from its
first page, one known static only at its re-checks (counted across runs), and a re-check that
finds a difference flips it."""

import asyncio
import logging
from datetime import datetime
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.history.recording import render_choices as table
from scrapeflow_dagster.engine.render import choice_store
from scrapeflow_dagster.engine.render.choice import (
    RECHECK_EVERY,
    SAMPLE_PAGES,
    Known,
    Parsed,
    RenderChoices,
)

HOST = "shop.test"
STATIC = Parsed(frozenset({"/a"}), 1000)
SAME = Parsed(frozenset({"/a"}), 1000)
MORE = Parsed(frozenset({"/a", "/b"}), 1000)  # the browser found a link the body lacks
CHECKED = datetime(2026, 12, 1, 9, 0)


def _page(n: int) -> str:
    return f"https://{HOST}/page/{n}"


async def test_a_known_static_pattern_is_rendered_only_at_its_rechecks() -> None:
    choices = RenderChoices()
    seen_before = RECHECK_EVERY + 5
    known = {f"{HOST}/page/*": Known(SAMPLE_PAGES + 1, 0, seen_before, CHECKED, "run-1")}
    choices.restore_once(lambda: known)

    decisions = [await choices.decide(_page(n)) for n in range(2 * RECHECK_EVERY)]

    rendered = [n for n, d in enumerate(decisions) if d.render]
    # Pages seen across runs: the re-check is the pattern's 40th page, this run's 15th.
    assert rendered == [2 * RECHECK_EVERY - seen_before - 1, 3 * RECHECK_EVERY - seen_before - 1]
    assert all(decisions[n].compare for n in rendered)
    evidence = choices.evidence(_page(0))
    assert evidence == {
        "url_pattern": f"{HOST}/page/*",
        "judgement": "static",
        "pages_sampled": SAMPLE_PAGES + 1,
        "pages_browser_needed": 0,
        "pages_seen": seen_before + 2 * RECHECK_EVERY,
        "checked_at": "2026-12-01 09:00:00",
        "checked_by": "run-1",  # no check in this run yet: the earlier run's
    }

    assert choices.learn(_page(rendered[0]), STATIC, MORE) is True  # the re-check differs
    flipped = await choices.decide(_page(99))
    assert flipped.render and not flipped.compare
    assert choices.evidence(_page(0))["judgement"] == "browser"
    assert "checked_by" not in choices.evidence(_page(0))  # this run's: DuckDB names it


async def test_a_known_browser_pattern_renders_its_first_page_without_a_sample() -> None:
    choices = RenderChoices()
    choices.restore_once(lambda: {f"{HOST}/app/item/*": Known(3, 3, 12, CHECKED, "run-1")})
    choices.restore_once(lambda: {})  # once per run: later calls change nothing

    first = await choices.decide(f"https://{HOST}/app/item/1")
    assert first.render and not first.compare
    assert first.reason == "its pattern's pages need a browser"
    unknown = await choices.decide(f"https://{HOST}/other/1")
    assert unknown.render and unknown.compare  # a pattern nobody judged is sampled


async def test_pages_waiting_for_the_samples_are_not_all_rechecks() -> None:
    """Pages that waited for their pattern's samples each keep their own place: only the one
    at a multiple of RECHECK_EVERY is a re-check (all of them were, when the count reached it
    while they waited)."""
    choices = RenderChoices()
    waiting = [asyncio.create_task(choices.decide(_page(n))) for n in range(RECHECK_EVERY)]
    await asyncio.sleep(0)
    samples = [task.result() for task in waiting[:SAMPLE_PAGES]]
    assert all(d.compare for d in samples)
    for n in range(SAMPLE_PAGES):
        choices.learn(_page(n), STATIC, SAME)

    judged = await asyncio.gather(*waiting[SAMPLE_PAGES:])
    assert [d.render for d in judged].count(True) == 1
    assert judged[-1].reason == "a static pattern's re-check"


def test_an_unreadable_file_is_nothing_learned_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    status_dir = tmp_path / "status"
    path = choice_store.snapshot_of(status_dir)
    assert choice_store.load_known(path) == {}  # none yet
    path.write_bytes(b'{"render_choices": [{"pattern": "x/*", "pages_sam')
    with caplog.at_level(logging.WARNING):
        assert choice_store.load_known(path) == {}
    assert str(path) in caplog.text


def test_the_reader_names_the_file_the_writer_publishes(tmp_path: Path) -> None:
    """`render` may not import `history`: the two modules name the file each, equally."""
    assert choice_store.SNAPSHOT_NAME == table.SNAPSHOT_NAME
    layout_db = tmp_path / "scrapeflow.duckdb"
    assert choice_store.snapshot_of(tmp_path / "status") == table.snapshot_path(layout_db)
