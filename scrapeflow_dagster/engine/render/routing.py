"""Every request a rendered page makes, answered through the gate or refused.

The page's own document is answered from the body `scrape` stored (nothing is fetched again).
Any other request (a script, a stylesheet, an XHR or fetch, a frame) is fetched with
`gate.fetch`, as a task of the page's trust: a public page's scripts are public, so the address
guard keeps them out of internal networks (the browser's own SSRF door), robots.txt applies to
each URL, each request waits for its host's slot and delay like a plain request, redirects are
followed and checked hop by hop and the body is capped. Requests of the resource types the
settings block (images, fonts, media by default) are refused unfetched, as are navigations of
the page away from its document.

GET and HEAD are always sent; another method (a GraphQL or JSON API's POST) only when the
settings list it, for the page's own origin (`script_methods`) or another
(`script_methods_other_origins`). Its body is forwarded with its Content-Type, never stored,
and it is sent once: the gate's retries would repeat a write the site may have done (browsers
do not retry it either).
"""

import asyncio
import contextlib
import dataclasses
from typing import Any, NamedTuple

from yarl import URL

from scrapeflow_dagster.engine.errors import HttpStatusError, ScrapeError
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.render.devtools import BrowserError
from scrapeflow_dagster.engine.render.tab import PausedRequest
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.state.trust import TRUST

# Request headers a page's request carries through the gate (the gate sends its own
# User-Agent; hop-by-hop and length headers are the gate's client's business).
FORWARDED_REQUEST_HEADERS = ("accept", "accept-language", "referer", "cookie", "origin")
# ... and with a body, what tells the site how to read it.
FORWARDED_BODY_HEADERS = ("content-type",)
# Methods always sent, and those the gate may try again (RFC 9110's idempotent methods): a POST
# or PATCH tried twice may be a write done twice.
ALWAYS_SENT = frozenset({"GET", "HEAD"})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# Answer headers not passed back to the browser: the gate hands over the decoded body.
_DROPPED_ANSWER_HEADERS = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)
# Refused requests listed per page (the count goes on past it).
REFUSALS_KEPT = 20


class Document(NamedTuple):
    """The page's own document: its URL and what `scrape` stored for it."""

    url: str
    body: bytes
    content_type: str


class RequestLog:
    """What one page's requests came to: fetched, blocked by type, refused (URL, method and
    why, redacted)."""

    def __init__(self) -> None:
        self.fetched = 0
        self.blocked = 0
        self.refused = 0
        self.refusals: list[dict[str, str]] = []

    def refuse(self, url: str, why: str, *, method: str = "GET") -> None:
        """Count a refused request of `method` to `url`, and list it among the first
        `REFUSALS_KEPT` with `why`."""
        self.refused += 1
        if len(self.refusals) < REFUSALS_KEPT:
            self.refusals.append({"url": redact(url), "method": method, "error": redact(why)})


class GateRouter:
    """The request handler of one page (`page.intercept(router.handle)`)."""

    def __init__(
        self,
        context: Context,
        document: Document,
        *,
        trust: str,
        blocked_types: frozenset[str],
        main_frame_id: str,
    ) -> None:
        self.context = context
        self.document = document
        self.trust = trust
        self.blocked_types = blocked_types
        self.main_frame_id = main_frame_id
        self.log = RequestLog()
        self._document_served = False
        self._origin = _origin(document.url)
        self._sent_once: Context | None = None
        # Requests being answered now, and when the last one began or ended (the loop's
        # clock): what tells the page's network has gone quiet.
        self.in_flight = 0
        self.last_activity = asyncio.get_running_loop().time()
        # The gate fetches under way, cancelled once the page is done (`cancel_pending`): a
        # long poll of a closed page must not hold its host's slot.
        self._fetches: set[asyncio.Task[Any]] = set()
        self._done = False

    async def handle(self, request: PausedRequest) -> None:
        """Answer one request the page's browser holds through the gate, or refuse it."""
        loop = asyncio.get_running_loop()
        self.in_flight += 1
        self.last_activity = loop.time()
        try:
            await self._answer(request)
        finally:
            self.in_flight -= 1
            self.last_activity = loop.time()

    async def _answer(self, request: PausedRequest) -> None:
        if self._done:
            await _quietly(request.abort("aborted"))  # the page is being closed
            return
        url = request.url
        if request.is_main_navigation():
            if not self._document_served and url == self.document.url:
                self._document_served = True
                headers = {"content-type": self.document.content_type}
                await _quietly(request.fulfill(200, headers, self.document.body))
            else:
                # The page leaving its document (a script's location change, a meta refresh):
                # the rendered page is the task's own.
                self.log.refuse(
                    url, "navigation away from the rendered document", method=request.method
                )
                await _quietly(request.abort("blockedbyclient"))
            return
        if request.method == "OPTIONS" and "access-control-request-method" in request.headers:
            # A CORS preflight (the browser's own: no script may set that header) is answered
            # here, allowing what it asks, as Playwright answers it: the request it clears comes
            # next and meets the method policy and the gate like any other, named in the
            # refusals by its own method.
            await _quietly(request.fulfill(204, _preflight_allowed(request.headers), b""))
            return
        if request.resource_type in self.blocked_types:
            self.log.blocked += 1
            await _quietly(request.abort("blockedbyclient"))
            return
        method = request.method
        refusal = self._method_refusal(method, url)
        if refusal is not None:
            self.log.refuse(url, refusal, method=method)
            await _quietly(request.abort("blockedbyclient"))
            return
        # Forwarded, never kept: the body goes out with this request only.
        data = None if method in ALWAYS_SENT else request.post_data
        headers = _forwarded(request.headers, url, with_body=data is not None)
        params = {TRUST: self.trust, "url": url, "headers": headers}
        context = self.context if method in _IDEMPOTENT else self._once()
        # The page's own method: a HEAD sent as a GET would fetch (and cap) a whole body.
        fetching = asyncio.ensure_future(fetch(context, params, method=method, data=data))
        self._fetches.add(fetching)
        try:
            fetched = await fetching
        except asyncio.CancelledError:
            if not fetching.cancelled():
                raise  # this handler itself is being cancelled
            await _quietly(request.abort("aborted"))  # the page is done
            return
        except HttpStatusError as exc:
            # An answer all the same: the page's scripts see its status.
            self.log.fetched += 1
            await _quietly(request.fulfill(exc.status, {}, b""))
            return
        except ScrapeError as exc:
            self.log.refuse(url, str(exc), method=method)
            await _quietly(request.abort("blockedbyclient"))
            return
        finally:
            self._fetches.discard(fetching)
        self.log.fetched += 1
        headers = {
            name: value
            for name, value in fetched.headers.items()
            if name.lower() not in _DROPPED_ANSWER_HEADERS
        }
        await _quietly(request.fulfill(fetched.status, headers, fetched.body))

    def _method_refusal(self, method: str, url: str) -> str | None:
        """Why a request of `method` to `url` is not sent (its method not listed for its
        origin), or None."""
        if method in ALWAYS_SENT:
            return None
        settings = self.context.settings.render
        if self._origin is not None and _origin(url) == self._origin:
            if method in settings.script_methods:
                return None
            return f"{method} requests to the page's origin are not sent (render_script_methods)"
        if method in settings.script_methods_other_origins:
            return None
        return (
            f"{method} requests to another origin than the page's are not sent"
            " (render_script_methods_other_origins)"
        )

    def _once(self) -> Context:
        """The context of a request that is not idempotent: the gate tries it once."""
        if self._sent_once is None:
            settings = self.context.settings
            retry = dataclasses.replace(settings.retry, max_attempts=1, max_proxy_attempts=0)
            once = dataclasses.replace(settings, retry=retry)
            self._sent_once = self.context._replace(settings=once)
        return self._sent_once

    def cancel_pending(self) -> None:
        """Cancel the gate fetches still under way and refuse any new request (the page is done
        with)."""
        self._done = True
        for fetching in self._fetches:
            fetching.cancel()


def _preflight_allowed(headers: dict[str, str]) -> dict[str, str]:
    """The answer headers that clear a CORS preflight's request (its origin, method, headers)."""
    allowed = {
        "access-control-allow-origin": headers.get("origin", "*"),
        "access-control-allow-methods": headers.get("access-control-request-method", "GET"),
        "access-control-allow-credentials": "true",
    }
    if "access-control-request-headers" in headers:
        allowed["access-control-allow-headers"] = headers["access-control-request-headers"]
    return allowed


def _origin(url: str) -> URL | None:
    """The origin of `url` (None for one yarl cannot read: never the page's own)."""
    try:
        return URL(url).origin()
    except ValueError:
        return None


def _forwarded(headers: dict[str, str], url: str, *, with_body: bool) -> dict[str, str]:
    names = (*FORWARDED_REQUEST_HEADERS, *(FORWARDED_BODY_HEADERS if with_body else ()))
    kept = {name: value for name, value in headers.items() if name in names}
    if "referer" in kept:
        referer = referer_for(kept.pop("referer"), url)
        if referer is not None:
            kept["referer"] = referer
    return kept


def referer_for(referer: str, url: str) -> str | None:
    """The Referer a page's request to `url` carries: whole to the page's own origin, the
    origin alone to another, none from https to http (the browsers' default policy,
    strict-origin-when-cross-origin, whatever policy the page sets: the page's URL may hold
    the task's credentials, `token=...`, which no other site is to see)."""
    try:
        source, target = URL(referer), URL(url)
        if source.origin() == target.origin():
            return referer
    except ValueError:
        return None
    if source.scheme == "https" and target.scheme != "https":
        return None
    return f"{source.origin()}/"


async def _quietly(action: Any) -> None:
    """Run a request's answer; a page closed meanwhile (its render timed out) makes it fail,
    which changes nothing."""
    with contextlib.suppress(BrowserError):
        await action
