"""The bundled local site in its own process on a free 127.0.0.1 port, /health awaited."""

import json
import subprocess
from collections.abc import Sequence

from bench.lib.local_http import free_port, http_ok, wait_until
from bench.lib.proc_stats import proc_cpu_seconds
from bench.lib.repo import PYTHON, REPO

_SITE_CODE = """
import json
import sys
from scrapeflow_dagster.site.server import run_site_forever
changing = json.loads(sys.argv[4])  # the changing pages' options given (none: the defaults)
run_site_forever(
    "127.0.0.1",
    int(sys.argv[1]),
    pages=int(sys.argv[2]),
    page_bytes=int(sys.argv[3]),
    on_ready=lambda url: print(url, flush=True),
    **changing,
)
"""


class Site:
    """The bundled local site in its own process; `with Site(pages) as site: site.url`.

    `changing_pages` and `changing_rates` go to `build_site` when given (None: its defaults).
    """

    def __init__(
        self,
        pages: int,
        page_bytes: int = 20_000,
        *,
        changing_pages: int | None = None,
        changing_rates: Sequence[float] | None = None,
    ) -> None:
        self.pages = pages
        self.page_bytes = page_bytes
        self.changing: dict[str, object] = {}
        if changing_pages is not None:
            self.changing["changing_pages"] = changing_pages
        if changing_rates is not None:
            self.changing["changing_rates"] = [float(rate) for rate in changing_rates]
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> "Site":
        for _attempt in range(3):  # the free port may be taken between the probe and the bind
            port = free_port()
            self.proc = subprocess.Popen(
                [
                    PYTHON,
                    "-c",
                    _SITE_CODE,
                    str(port),
                    str(self.pages),
                    str(self.page_bytes),
                    json.dumps(self.changing),
                ],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline().strip()
            if line.startswith("http://"):
                self.url = line
                break
            self._stop()
        else:
            raise RuntimeError("the local site did not start")
        try:
            wait_until(lambda: http_ok(self.url + "/health"), timeout=30, what="site /health")
        except TimeoutError:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()  # run_site_forever stops cleanly on SIGTERM
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def cpu_seconds(self) -> float | None:
        """User + system CPU the site's process has used so far."""
        if self.proc is None:
            return None
        return proc_cpu_seconds(self.proc.pid)
