"""What the run's browser costs besides its pages (`browser.MEMORY_ARGS`), with the real Chromium
(each installed one `render_chromium_path: auto` may pick): no driver process, no omnibox WebUI
renderer, one renderer for a site's pages open at once in a context, automation's feature
switches in force beside the memory ones; and a run killed takes its browser with it."""

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from scrapeflow_dagster.engine.render.browser import CHROMIUM_CANDIDATES, RunBrowser
from scrapeflow_dagster.engine.render.tab import PausedRequest
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


INSTALLED = [path for path in CHROMIUM_CANDIDATES if os.access(path, os.X_OK)]


async def _fulfill_h1(request: PausedRequest) -> None:
    await request.fulfill(200, {"content-type": "text/html"}, b"<h1>x</h1>")


@pytest.mark.parametrize("chromium", INSTALLED)
async def test_a_sites_pages_share_one_renderer_and_no_webui_renderer_runs(
    site: LocalSite, chromium: str
) -> None:
    browser = RunBrowser(RenderSettings(chromium_path=chromium), user_agent="test")
    try:
        async with browser.page() as first:
            async with browser.page() as second, browser.page() as third:
                pages = (first, second, third)
                for n, page in enumerate(pages):
                    page.intercept(_fulfill_h1)
                    await page.goto(site.url(f"/app/item/{n}"), 10)
                await asyncio.sleep(0.5)
                renderers = _renderers()
                below = [argv for pid in _tree(os.getpid()) if (argv := _argv(pid))]
        # The omnibox popup's WebUI (the new headless mode's top chrome): not built.
        assert not [argv for argv in renderers if "--top-chrome-webui" in argv]
        # Three pages of one site in one context: one renderer, no spare one beside it.
        assert len(renderers) == 1
        # No driver process between the run and its browser, no GPU or network process.
        assert not [argv for argv in below if argv[0].endswith("node")]
        chromium = [argv for argv in below if "chromium" in argv[0]]
        assert {"browser", "renderer", "zygote"} <= {_kind(argv) for argv in chromium}
        assert [_kind(argv) for argv in chromium].count("zygote") == 1  # no unsandboxed one
        assert not [argv for argv in chromium if _kind(argv) == "gpu-process"]
        assert not [
            argv for argv in chromium if "--utility-sub-type=network.mojom.NetworkService" in argv
        ]
    finally:
        await browser.aclose()


def _kind(argv: list[str]) -> str:
    types = [arg.split("=", 1)[1] for arg in argv if arg.startswith("--type=")]
    if types:
        return types[0]
    return "browser"


async def test_the_features_automation_turns_off_are_off_in_the_pages_renderer() -> None:
    browser = RunBrowser(RenderSettings(), user_agent="test")
    try:
        async with browser.page() as page:
            page.intercept(_fulfill_h1)
            await page.goto("http://example.test/", 10)
            argv = _renderers()[0]
    finally:
        await browser.aclose()
    # Chromium keeps only the last `--disable-features`: automation's and memory's in one.
    disabled = _features(argv, "--disable-features")
    assert {"HttpsUpgrades", "ThirdPartyStoragePartitioning", "WebUIOmniboxPopup"} <= disabled


_HOLD_A_PAGE = """
import asyncio, sys
from scrapeflow_dagster.engine.render.browser import RunBrowser
from scrapeflow_dagster.engine.settings import RenderSettings

async def main():
    browser = RunBrowser(RenderSettings(chromium_path=sys.argv[1]), user_agent="test")
    async with browser.page():
        print(browser.pid, flush=True)
        await asyncio.sleep(120)

asyncio.run(main())
"""


@pytest.mark.parametrize("chromium", INSTALLED)
def test_a_run_killed_takes_its_browser_with_it(chromium: str) -> None:
    """SIGKILL leaves the run no time to close anything: its browser, whose DevTools pipe
    closes with the run, quits with its whole process group."""
    # The killed run cannot remove its browser's profile: made in a folder removed here (a
    # short path: Chromium's socket in the profile must fit a socket address).
    scratch = tempfile.TemporaryDirectory(prefix="sf-kill-")
    env = {**os.environ, "TMPDIR": scratch.name}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_A_PAGE, chromium], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout is not None
        browser_pid = int(holder.stdout.readline())
        assert _group(browser_pid)  # the browser, its zygotes, the page's renderer
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 15
    while _group(browser_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _group(browser_pid)
    scratch.cleanup()
    assert not left


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (zombies are not)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.fixture(autouse=True)
def _no_browser_left() -> None:
    """Each test closes what it launched (a renderer left would be counted by the next)."""
    assert not _renderers()
