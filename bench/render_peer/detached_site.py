"""The bundled site (`Site(pages=10)`) held by a helper re-parented away from this process, so
that neither side's process tree holds it."""

import contextlib
import json
import os
import signal
import subprocess
import urllib.request

from bench.lib.proc_stats import proc_cpu_seconds
from bench.lib.repo import PYTHON, REPO
from bench.render_peer.processes import wait_gone

# The helper forks and its first process exits: the helper left is re-parented away from this
# process, so neither side's tree holds the site. It stops the site when told (SIGTERM) or when
# its stdin closes (this process ended, however).
_SITE_HOLDER = """
import os, signal, sys
if os.fork():
    os._exit(0)
def stop(*_):
    raise SystemExit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
from bench.lib.site import Site
with Site(pages=10) as site:
    print(os.getpid(), site.proc.pid, site.url, flush=True)
    sys.stdin.read()
"""


class DetachedSite:
    """The bundled site (`Site(pages=10)`) held by a helper outside this process's tree."""

    def __init__(self) -> None:
        self.url = ""
        self.holder_pid: int | None = None
        self.site_pid: int | None = None
        self._launcher: subprocess.Popen[str] | None = None

    def __enter__(self) -> "DetachedSite":
        self._launcher = subprocess.Popen(
            [PYTHON, "-c", _SITE_HOLDER],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self._launcher.stdout is not None
        line = self._launcher.stdout.readline().split()
        self._launcher.wait(timeout=30)
        if len(line) != 3 or not line[2].startswith("http://"):
            self._stop()
            raise RuntimeError("the local site did not start")
        self.holder_pid, self.site_pid, self.url = int(line[0]), int(line[1]), line[2]
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._launcher is None:
            return
        if self.holder_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.holder_pid, signal.SIGTERM)
        if self._launcher.stdin is not None:
            with contextlib.suppress(OSError):
                self._launcher.stdin.close()  # the holder's stdin: closed, it stops too
        if self._launcher.stdout is not None:
            self._launcher.stdout.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._launcher.wait(timeout=10)
        for pid in (self.holder_pid, self.site_pid):
            if pid is not None and not wait_gone(pid, 15):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self._launcher = None

    def cpu_seconds(self) -> float:
        return (proc_cpu_seconds(self.site_pid) or 0.0) if self.site_pid else 0.0

    def requests(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/control/requests", timeout=30) as answer:
            paths: dict[str, int] = json.loads(answer.read())["paths"]
        return paths

    def reset_requests(self) -> None:
        request = urllib.request.Request(self.url + "/control/requests/reset", method="POST")
        urllib.request.urlopen(request, timeout=30).close()
