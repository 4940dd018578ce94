"""What the bundled site saw of a run, from its request counts (`/control/requests`): the
first request and first page after a command started, and whether each page came once."""

import json
import time
import urllib.error
import urllib.request
from typing import Any

from bench.lib.polling import Poller

FIRST_PAGE_POLL_SECONDS = 0.05


class FirstPage(Poller):
    """Polls the site's request counts in a thread until a `/page/N` shows; the seconds from
    `t0` (perf_counter, taken just before the command starts) to the first request and page."""

    def __init__(self, site_url: str, t0: float) -> None:
        self.url = site_url + "/control/requests"
        self.t0 = t0
        self.first_request_seconds: float | None = None
        self.first_page_seconds: float | None = None
        super().__init__()

    def _run(self) -> None:
        while not self._stop.is_set() and self.first_page_seconds is None:
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    paths: dict[str, int] = json.loads(response.read())["paths"]
            except (OSError, urllib.error.URLError, ValueError, KeyError):
                paths = {}  # a poll the busy site did not answer in time: the next one will
            seen = time.perf_counter() - self.t0
            if paths and self.first_request_seconds is None:
                self.first_request_seconds = seen
            if any(path.startswith("/page/") for path in paths):
                self.first_page_seconds = seen
            self._stop.wait(FIRST_PAGE_POLL_SECONDS)


def post(url: str) -> None:
    request = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


def page_requests(site_url: str, n: int) -> dict[str, Any]:
    """How many of the N pages the site served, and how many more than once."""
    with urllib.request.urlopen(site_url + "/control/requests", timeout=300) as response:
        paths: dict[str, int] = json.loads(response.read())["paths"]
    pages = {p: c for p, c in paths.items() if p.startswith("/page/")}
    return {
        "pages_requested": len(pages),
        "pages_requested_again": sum(1 for c in pages.values() if c > 1),
        "pages_all_once": len(pages) == n and all(c == 1 for c in pages.values()),
        "other_paths": {p: c for p, c in paths.items() if not p.startswith("/page/")},
    }
