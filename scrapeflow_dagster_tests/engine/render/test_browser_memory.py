"""What the run's browser costs besides its pages (`browser.MEMORY_ARGS`), with the real Chromium:
no omnibox WebUI renderer, one renderer for a site's pages open at once in a context, and
Playwright's own feature switches still in force under ours (Chromium keeps only the last
`--disable-features`)."""

import asyncio
import os
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.settings import RenderSettings
from scrapeflow_dagster.site.server import LocalSite


def _tree(root: int) -> list[int]:
    """The pids of every process below `root` (from each process's parent in /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The parent is the 2nd field after the command, which is in parentheses.
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _argv(pid: int) -> list[str]:
    """The arguments of process `pid`; Chromium's children rewrite theirs as one string, split
    again on spaces here (none of the switches read here holds one)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.replace(b"\0", b" ").decode(errors="replace").split()


def _renderers() -> list[list[str]]:
    """The argv of every Chromium renderer below this process."""
    found = [_argv(pid) for pid in _tree(os.getpid())]
    return [argv for argv in found if "--type=renderer" in argv]


def _features(argv: list[str], switch: str) -> set[str]:
    """The features a process was started with under `switch` (`--disable-features`...)."""
    values = [arg.split("=", 1)[1] for arg in argv if arg.startswith(f"{switch}=")]
    return {name for value in values for name in value.split(",") if name}


async def test_a_sites_pages_share_one_renderer_and_no_webui_renderer_runs(
    site: LocalSite,
) -> None:
    browser = RunBrowser(RenderSettings(), user_agent="test")
    try:
        async with browser.page() as first:
            async with browser.page() as second, browser.page() as third:
                pages = (first, second, third)
                for n, page in enumerate(pages):
                    await page.route("**/*", lambda route: route.fulfill(body=b"<h1>x</h1>"))
                    await page.goto(site.url(f"/app/item/{n}"))
                await asyncio.sleep(0.5)
                renderers = _renderers()
        # The omnibox popup's WebUI (the new headless mode's top chrome): not built.
        assert not [argv for argv in renderers if "--top-chrome-webui" in argv]
        # Three pages of one site in one context: one renderer, no spare one beside it.
        assert len(renderers) == 1
    finally:
        await browser.aclose()


async def test_playwrights_own_feature_switches_stay_in_force_under_ours() -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        bare = await playwright.chromium.launch(executable_path=RenderSettings().chromium_path)
        try:
            page = await bare.new_page()
            await page.set_content("<p>x</p>")
            # A page's renderer (a spare one beside it is started alike).
            argv = next(argv for argv in _renderers() if "--top-chrome-webui" not in argv)
            playwrights_off = _features(argv, "--disable-features")
            playwrights_on = _features(argv, "--enable-features")
        finally:
            await bare.close()
    assert "ThirdPartyStoragePartitioning" in playwrights_off  # what Playwright turns off

    browser = RunBrowser(RenderSettings(), user_agent="test")
    try:
        async with browser.page() as page:
            await page.set_content("<p>x</p>")
            argv = _renderers()[0]
    finally:
        await browser.aclose()
    assert playwrights_off | {"WebUIOmniboxPopup"} <= _features(argv, "--disable-features")
    assert playwrights_on <= _features(argv, "--enable-features")


@pytest.fixture(autouse=True)
def _no_browser_left() -> None:
    """Each test closes what it launched (a renderer left would be counted by the next)."""
    assert not _renderers()
