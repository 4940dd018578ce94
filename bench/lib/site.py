"""The bundled local site in its own process on a free 127.0.0.1 port, /health awaited."""

import subprocess

from bench.lib.local_http import free_port, http_ok, wait_until
from bench.lib.proc_stats import proc_cpu_seconds
from bench.lib.repo import PYTHON, REPO

_SITE_CODE = """
import sys
from scrapeflow_dagster.site.server import run_site_forever
run_site_forever(
    "127.0.0.1",
    int(sys.argv[1]),
    pages=int(sys.argv[2]),
    page_bytes=int(sys.argv[3]),
    on_ready=lambda url: print(url, flush=True),
)
"""


class Site:
    """The bundled local site in its own process; `with Site(pages) as site: site.url`."""

    def __init__(self, pages: int, page_bytes: int = 20_000) -> None:
        self.pages = pages
        self.page_bytes = page_bytes
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> "Site":
        for _attempt in range(3):  # the free port may be taken between the probe and the bind
            port = free_port()
            self.proc = subprocess.Popen(
                [PYTHON, "-c", _SITE_CODE, str(port), str(self.pages), str(self.page_bytes)],
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
