"""`context.session`: the HTTP session an executor gets, guarded by the trust of its task.

An executor of a user's fetches what it likes: an API link, an image, a "next" link read from
the page. Its requests must not reach where the page's own could not, so `context.session`
sends each request of a public task through the run's guarded session (names filtered by the
guarded resolver, every socket checked as it opens, `polite.sockets`), and an intranet task's
through the run's plain one; which, is decided per request from the task whose step is running
(`current_task`, set by the runner). It follows no redirect by itself: a redirect is a URL the
answer taught, and only `context.fetch` (the gate: robots.txt, host slots, proxy, body cap,
every hop checked) follows one. The plain aiohttp session stays reachable, by name only, as
`context.unguarded_session`.
"""

from collections.abc import Generator
from contextvars import ContextVar
from types import TracebackType
from typing import Any

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.polite.addresses import AddressGuard
from scrapeflow_dagster.engine.state.schema import StatusData
from scrapeflow_dagster.engine.state.trust import INTRANET, INTRANET_PAGE, PUBLIC, trust_of

# The status of the task whose step runs in this asyncio task (the runner sets it per task:
# one `ContextVar.set`, not a context per task).
current_task: ContextVar[StatusData | None] = ContextVar("scrapeflow_current_task", default=None)
# The executor that stored the page a task's links come from (`executors.scrape`).
_SCRAPE = "scrape"


async def task_is_intranet(guard: AddressGuard | None, status: StatusData | None) -> bool:
    """Whether requests of the task with `status` may reach internal addresses.

    Public unless its `trust` says intranet, or it has none and its URL is on an internal
    address; once its page was fetched, what that page was decides (an intranet task
    redirected to a public host holds a public page, whose links are public). No task (code
    run outside a step) is public.
    """
    if guard is None or not guard.enabled:
        return True  # nothing is checked: every route may go anywhere
    if status is None:
        return False
    params = status.get("params") or {}
    try:
        trust = trust_of(params)
    except ValueError:
        return False  # an unknown trust opens nothing
    if trust == PUBLIC:
        return False
    scraped = status.get(_SCRAPE)
    if isinstance(scraped, dict) and "final_url" in scraped:
        return scraped.get(INTRANET_PAGE) is True
    if trust == INTRANET:
        return True
    try:
        host = URL(str(params.get("url", ""))).raw_host or ""
    except ValueError:
        return False
    return bool(host) and await guard.is_internal_host(host)


def trust_for_task(intranet: bool) -> str:
    """The `trust` param of a request made for a task that is (or is not) intranet."""
    return INTRANET if intranet else PUBLIC


class _TaskRequest:
    """One request of `TaskSession`: awaited, or used as `async with` (aiohttp's two forms)."""

    def __init__(self, owner: "TaskSession", method: str, url: Any, options: dict[str, Any]):
        self._owner = owner
        self._method = method
        self._url = url
        self._options = options
        self._response: aiohttp.ClientResponse | None = None

    async def _send(self) -> aiohttp.ClientResponse:
        session = await self._owner.session_of_current_task()
        return await session.request(
            self._method, self._url, allow_redirects=False, **self._options
        )

    def __await__(self) -> Generator[Any, None, aiohttp.ClientResponse]:
        return self._send().__await__()

    async def __aenter__(self) -> aiohttp.ClientResponse:
        self._response = await self._send()
        return self._response

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._response is not None:
            self._response.release()
            await self._response.wait_for_close()


class TaskSession:
    """aiohttp's request methods (`get`, `post`, `request`, ...) for an executor, each request
    sent on the session its task's trust allows and never redirected (see the module).

    Raises (from a request):
        AddressRefusedError: a public task's request reached for an internal address.
        ValueError: `allow_redirects=True` was asked for.
    """

    def __init__(self, plain: aiohttp.ClientSession, guard: AddressGuard | None) -> None:
        self._plain = plain
        self._guard = guard

    async def session_of_current_task(self) -> aiohttp.ClientSession:
        """The session the running task's requests go out on."""
        guard = self._guard
        if guard is None or guard.session is None:
            return self._plain
        if await task_is_intranet(guard, current_task.get()):
            return self._plain
        return guard.session

    def request(
        self, method: str, url: str | URL, *, allow_redirects: bool = False, **options: Any
    ) -> _TaskRequest:
        """Send `method` to `url` (aiohttp's options); the answer as it came, a redirect too."""
        if allow_redirects:
            raise ValueError(
                "context.session follows no redirect by itself (a redirect is a URL the answer "
                "taught, and must pass the gate): use `await context.fetch(url)`, which follows "
                "redirects hop by hop"
            )
        return _TaskRequest(self, method, url, options)

    def get(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A GET (see `request`)."""
        return self.request("GET", url, **options)

    def head(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A HEAD (see `request`)."""
        return self.request("HEAD", url, **options)

    def options(self, url: str | URL, **options: Any) -> _TaskRequest:
        """An OPTIONS request (see `request`)."""
        return self.request("OPTIONS", url, **options)

    def post(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A POST (see `request`)."""
        return self.request("POST", url, **options)

    def put(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A PUT (see `request`)."""
        return self.request("PUT", url, **options)

    def patch(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A PATCH (see `request`)."""
        return self.request("PATCH", url, **options)

    def delete(self, url: str | URL, **options: Any) -> _TaskRequest:
        """A DELETE (see `request`)."""
        return self.request("DELETE", url, **options)

    @property
    def closed(self) -> bool:
        """Whether the run's sessions are closed (the run is over)."""
        return self._plain.closed

    @property
    def headers(self) -> Any:
        """The headers every request carries (the User-Agent)."""
        return self._plain.headers

    def __getattr__(self, name: str) -> Any:
        # Anything else of aiohttp's session (its connector, `_request`, `ws_connect`) would
        # be a way around the check: named, not handed over.
        raise AttributeError(
            f"context.session has no {name!r}: it offers request methods only (get, post, "
            "request, ...); `context.fetch` goes through the gate, and the plain aiohttp session "
            "is `context.unguarded_session` (no address guard, robots.txt or host limits)"
        )
