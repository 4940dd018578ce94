"""The bundled site for tests that need it outside their own process: served by a child process
(shaped like a real network), and its control routes called from synchronous code."""

import signal
import subprocess
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from scrapeflow_dagster.site.app import FaultRates
from scrapeflow_dagster_tests.support.paths import PYTHON

# The site in its own process: the scraper under test never shares an event loop or a GIL with it.
# `latency` seconds are added to every answer (a real network's round trip), so that a scrape
# lasts long enough for a kill to land in it; with `stamp`, every page answer ends with its own
# serial number, so two fetches of one page never have the same bytes (or md5).
_SITE_SCRIPT = """
import asyncio
import itertools
import sys

from aiohttp import web

from scrapeflow_dagster.site import server
from scrapeflow_dagster.site.app import FaultRates, build_site

pages, page_bytes, latency = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
stamp, slow_seconds, host = sys.argv[4] == "1", float(sys.argv[5]), sys.argv[6]
serials = itertools.count(1)


@web.middleware
async def shape(request, handler):
    if latency > 0:
        await asyncio.sleep(latency)
    response = await handler(request)
    if stamp and isinstance(response, web.Response) and isinstance(response.body, bytes):
        response.body = response.body + f"<!-- answer {next(serials)} -->\\n".encode()
    return response


def build_shaped_site(**options):
    app = build_site(**options)
    app.middlewares.append(shape)
    return app


server.build_site = build_shaped_site
server.run_site_forever(
    host, 0, pages=pages, page_bytes=page_bytes,
    fault_rates=FaultRates(slow_seconds=slow_seconds),
    on_ready=lambda url: print(url, flush=True),
)
"""


@contextmanager
def site_process(
    *,
    pages: int,
    page_bytes: int,
    latency_seconds: float = 0.0,
    stamp: bool = False,
    slow_seconds: float = FaultRates().slow_seconds,
    host: str = "127.0.0.1",
    prefix: Sequence[str] = (),
) -> Iterator[str]:
    """Run the bundled site with `run_site_forever` in a child process, on `host`; yields its
    base URL.

    The `/mixed/{n}` pages have the default fault rates, with `slow_seconds` for slow answers.
    `prefix` runs the process through another command (`PublicHost.exec_prefix()`: on a test
    host).
    """
    args = [str(pages), str(page_bytes), str(latency_seconds), "1" if stamp else "0"]
    args += [str(slow_seconds), host]
    proc = subprocess.Popen(
        [*prefix, PYTHON, "-c", _SITE_SCRIPT, *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(f"http://{host}:"), f"the site did not start: {url!r}"
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)  # run_site_forever stops cleanly on SIGTERM
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def post(url: str) -> bytes:
    """POST with an empty body (the site's control routes)."""
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return bytes(response.read())
