"""Change detection through the chain (`scrape`, `pages`) against the site's `/changing/` pages,
whose changes are known: every change the site made between two fetches is one `changes` row
naming what changed, noise and 304s are no change, and each page's interval learns."""

import json
from pathlib import Path

import aiohttp

from scrapeflow_dagster.engine.executors.pages import pages
from scrapeflow_dagster.engine.executors.scrape import scrape
from scrapeflow_dagster.engine.run.step import run_chain
from scrapeflow_dagster.engine.settings import RevisitSettings, ScrapeSettings
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.site.content.changing import changing_page, version_at
from scrapeflow_dagster.site.server import LocalSite
from scrapeflow_dagster_tests.engine.history.helpers import query
from scrapeflow_dagster_tests.support.tasks import add_task_file

PAGES = 10
HOUR = 3600.0


async def set_clock(site: LocalSite, seconds: float) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(site.url(f"/control/changing/clock?t={seconds}")) as response,
    ):
        assert response.status == 200, await response.text()


def add(layout: DataLayout, site: LocalSite) -> list[str]:
    return add_task_file(layout, [f"c{n},{site.url(f'/changing/{n}')}" for n in range(PAGES)])


def status(layout: DataLayout, key: str) -> dict:
    return json.loads((layout.status_dir / f"{key}.status.json").read_text())


async def test_every_change_the_site_made_is_one_row_naming_what_changed(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add(layout, site)
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    assert query(layout.db_path, "SELECT count(*) FROM changes") == [(0,)]  # a first fetch
    first = {key: status(layout, key)["pages"]["revisit"] for key in keys}
    assert {state["interval_seconds"] for state in first.values()} == {7 * 24 * HOUR}

    # Two site days on: each page that changed at least once is one change, the rest none.
    later = 48 * HOUR
    await set_clock(site, later)
    await run_chain(layout, [scrape, pages], keys, settings=settings, max_age_seconds=0)

    versions = {f"c{n}": version_at(n, later) for n in range(PAGES)}
    changed = sorted(key for key, v in versions.items() if v > 0)
    assert changed and len(changed) < PAGES  # the default mix: some change, some never do
    rows = query(
        layout.db_path,
        "SELECT key, title_before, title_after, text_added, text_removed, links_added, "
        "links_removed, fields FROM changes ORDER BY key",
    )
    assert [row[0] for row in rows] == changed
    for key, title_before, title_after, added, removed, links_added, links_removed, fields in rows:
        n = int(key[1:])
        old, new = changing_page(n, 0), changing_page(n, versions[key])
        if old.title == new.title:
            assert (title_before, title_after) == (None, None)
        else:
            assert (title_before, title_after) == (old.title, new.title)
        # The paragraphs that differ, the heading and link texts that did, and nothing of the
        # noise (served time, view counter).
        assert {p for p in new.paragraphs if p not in old.paragraphs} <= set(added)
        assert {p for p in old.paragraphs if p not in new.paragraphs} <= set(removed)
        assert all(
            line in new.paragraphs or line == new.title or line.startswith(("Related: ", "Price: "))
            for line in added
        )
        assert all(
            line in old.paragraphs or line == old.title or line.startswith(("Related: ", "Price: "))
            for line in removed
        )
        assert not any("Served" in line or "views" in line for line in added + removed)
        assert links_added == [site.url(p) for p in new.links if p not in old.links]
        assert links_removed == [site.url(p) for p in old.links if p not in new.links]
        assert fields is None
    for key in keys:
        state = status(layout, key)["pages"]["revisit"]
        assert state["changed"] is (versions[key] > 0) and state["fetches"] == 2
        grown = first[key]["interval_seconds"] * (0.8 if versions[key] else 1.4)
        assert abs(state["interval_seconds"] - grown) < 1e-3

    # Fetched again with the clock still: conditional, 304s, nothing changed, no new row.
    await run_chain(layout, [scrape, pages], keys, settings=settings, max_age_seconds=0)
    assert all(status(layout, key)["scrape"].get("not_modified") for key in keys)
    assert all(status(layout, key)["pages"]["revisit"]["changed"] is False for key in keys)
    # Unconditionally (new served times, new view counts): still no change.
    await run_chain(layout, [scrape], keys, settings=settings, force=True)
    await run_chain(layout, [pages], keys, settings=settings, force=True)
    assert all(status(layout, key)["pages"]["revisit"]["changed"] is False for key in keys)
    assert [row[0] for row in query(layout.db_path, "SELECT key FROM changes ORDER BY key")] == (
        changed
    )
    # A parse of the same fetch again is no new observation.
    before = {key: status(layout, key)["pages"]["revisit"] for key in keys}
    await run_chain(layout, [pages], keys, settings=settings, force=True)
    assert {key: status(layout, key)["pages"]["revisit"] for key in keys} == before


async def test_without_kept_bodies_a_change_is_found_and_its_text_lines_are_unknown(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add(layout, site)[:1]  # page 0 changes hourly
    settings = ScrapeSettings(request_timeout_seconds=5.0, revisit=RevisitSettings(bodies_kept=0))
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    await set_clock(site, 10 * HOUR)
    await run_chain(layout, [scrape, pages], keys, settings=settings, max_age_seconds=0)
    ((added, count, links_added),) = query(
        layout.db_path, "SELECT text_added, text_added_count, links_added FROM changes"
    )
    assert (added, count) == (None, None) and links_added
    assert not list(layout.root.rglob("c0.scrape.1"))


async def test_tracking_off_records_no_digest_state_change_or_kept_body(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add(layout, site)[:1]  # page 0 changes hourly
    settings = ScrapeSettings(request_timeout_seconds=5.0, revisit=RevisitSettings(track=False))
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    await set_clock(site, 10 * HOUR)
    await run_chain(layout, [scrape, pages], keys, settings=settings, max_age_seconds=0)
    output = status(layout, "c0")["pages"]
    assert not {"revisit", "text_digest", "body_md5", "change"} & output.keys()
    assert output["title"] == changing_page(0, version_at(0, 10 * HOUR)).title  # parsed anew
    assert query(layout.db_path, "SELECT count(*) FROM changes") == [(0,)]
    assert not list(layout.root.rglob("c0.scrape.1"))


async def test_a_failed_parse_between_two_keeps_what_the_page_taught_and_its_change(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    keys = add(layout, site)[:1]  # page 0 changes hourly
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    learned = status(layout, "c0")["pages"]["revisit"]
    await set_clock(site, 10 * HOUR)
    await run_chain(layout, [scrape], keys, settings=settings, force=True)
    (layout.status_dir / "c0.scrape").unlink()  # the body gone: the parse fails
    await run_chain(layout, [pages], keys, settings=settings, force=True)
    failed = status(layout, "c0")
    assert failed["pages_status"].startswith("ERROR") and "pages" not in failed
    assert failed["pages_kept"]["revisit"] == learned

    await run_chain(layout, [scrape, pages], keys, settings=settings, force=True)
    after = status(layout, "c0")
    assert "pages_kept" not in after
    assert after["pages"]["revisit"]["fetches"] == 2 and after["pages"]["revisit"]["changed"]
    ((title_after, added),) = query(layout.db_path, "SELECT title_after, text_added FROM changes")
    new = changing_page(0, version_at(0, 10 * HOUR))
    assert title_after == new.title and set(new.paragraphs) & set(added)


async def test_a_fetched_file_that_changed_is_a_changes_row_by_its_bytes(
    site: LocalSite, tmp_path: Path
) -> None:
    layout = DataLayout(tmp_path / "data").ensure()
    # The site's request counts (JSON): they differ once the page beside them was fetched.
    rows = [f"counts,{site.url('/control/requests')}", f"page,{site.url('/page/1')}"]
    keys = add_task_file(layout, rows, name="files.csv")
    settings = ScrapeSettings(request_timeout_seconds=5.0)
    await run_chain(layout, [scrape, pages], keys, settings=settings)
    await run_chain(layout, [scrape, pages], keys, settings=settings, force=True)

    output = status(layout, "counts")["pages"]
    assert output["file"] is True and output["revisit"]["changed"] is True
    ((key, title, added, digest_before, digest_after),) = query(
        layout.db_path,
        "SELECT key, title_after, text_added, digest_before, digest_after FROM changes",
    )
    assert (key, title, added) == ("counts", None, None) and digest_before != digest_after
