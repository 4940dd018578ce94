"""One try of a request: its redirects followed here (not by aiohttp), so that every hop passes
the gate of a first request (the address guard, the hop's per-host slot and, before it is sent,
robots.txt of its host and, for a crawl task, the crawl's scope); the answer read under the
body cap."""

import functools
from typing import Any

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.crawl.scope import redirect_refusal
from scrapeflow_dagster.engine.errors import (
    BodyTooLargeError,
    DisallowedError,
    HttpStatusError,
    RedirectRefusedError,
    RobotsUnavailableError,
    TooManyRedirectsError,
)
from scrapeflow_dagster.engine.gate.route import Route
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.retry.requests import parse_retry_after, status_kind
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.tasks.urls import host_port, request_url, resolve_link

NOT_MODIFIED = 304
_CHUNK_BYTES = 64 * 1024
# Methods whose request carries no body.
_NO_BODY = frozenset({"GET", "HEAD"})
# Headers that describe a request's body, dropped when a redirect turns it into a GET.
_BODY_HEADERS = frozenset(
    {"content-type", "content-encoding", "content-language", "content-location"}
)
# Answers that send the client elsewhere (with a Location header).
REDIRECTS = frozenset({301, 302, 303, 307, 308})


async def read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
    """The body of `response`, refused past `cap` bytes as decoded.

    Raises:
        BodyTooLargeError: the body (declared or as read) is over `cap`.
    """
    declared = response.content_length
    if declared is not None and declared > cap:
        raise BodyTooLargeError(f"body of {declared} bytes is over the cap of {cap} bytes")
    if declared is not None and "Content-Encoding" not in response.headers:
        return await response.read()  # no encoding: Content-Length is the decoded size
    # Counted as read even when declared: Content-Length is the compressed size, and a small
    # gzip body can inflate far past the cap.
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
        body += chunk
        if len(body) > cap:
            raise BodyTooLargeError(f"body is over the cap of {cap} bytes (as decoded)")
    return bytes(body)


@functools.lru_cache(maxsize=16)
def _timeout(total_seconds: float) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=total_seconds)


async def request_once(
    context: Context,
    route: Route,
    url: URL,
    params: dict[str, Any],
    proxy: str | None,
    conditional: dict[str, str] | None = None,
    *,
    method: str | None = None,
    data: bytes | None = None,
) -> tuple[bytes, aiohttp.ClientResponse, Route]:
    """One try of a request for `url` with the task's `params`, redirects followed hop by hop.

    A redirect is a URL learned from the answer that sent it: once a hop of an intranet route
    is answered from a public address, the hops after it go out on the public route (guarded).

    Returns:
        The body, the final response (its `url` is the last hop's) and the route of its hop.
    """
    settings = context.settings
    payload = params.get("post_payload")
    if method is None:
        method = "POST" if payload is not None or data is not None else "GET"
    method = method.upper()
    # True leaves TLS to the session's connector (`settings.verify_tls`); False turns it off.
    verify = bool(params.get("verify_tls", settings.verify_tls))
    current, hops = url, 0
    drop_body_headers = False  # dropped once a redirect turned the request into a GET
    while True:
        # The task's headers and cookies (credentials, often) go to its own origin only.
        own_host = keeps_credentials(url, current)
        headers = params.get("headers") if own_host else None
        if headers and drop_body_headers:  # the Fetch standard's request-body headers
            headers = {k: v for k, v in headers.items() if k.lower() not in _BODY_HEADERS}
        if conditional and own_host:
            headers = {**(headers or {}), **conditional}
        what = f"redirect to {redact(str(current))}" if hops else redact(str(current))
        polite = context.polite
        slot = None
        if polite is not None:
            host = host_port(current)  # politeness's `host_of`
            slot = polite.try_acquire(host) or await polite.acquire(host)
        try:
            with route.guarding(current, what):
                async with route.session.request(
                    method,
                    current,
                    json=payload if method not in _NO_BODY and data is None else None,
                    data=data if method not in _NO_BODY else None,
                    cookies=params.get("cookies") if own_host else None,
                    headers=headers,
                    proxy=proxy,
                    ssl=verify,
                    timeout=_timeout(settings.request_timeout_seconds),
                    allow_redirects=False,
                ) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECTS and location is not None:
                        target = redirect_target(current, location)
                        refuse_body_elsewhere(response.status, method, url, target, payload, data)
                        # As browsers do: 303 (but after a HEAD), and 301/302 after a POST, go
                        # on as a GET without the body.
                        if (response.status == 303 and method != "HEAD") or (
                            method == "POST" and response.status in (301, 302)
                        ):
                            method, payload, data = "GET", None, None
                            drop_body_headers = True  # no body: its Content-Type goes with it
                    else:
                        body, answer = await read_answer(
                            context, response, proxy, conditional, method=method
                        )
                        return body, answer, route
        finally:
            if slot is not None:
                polite.release(slot)  # type: ignore[union-attr]
        hops += 1
        if hops > settings.max_redirects:
            raise TooManyRedirectsError(
                f"more than {settings.max_redirects} redirects (the last to {redact(str(target))})"
            )
        route = await route.after(current)
        await gate_hop(context, route, params, target, proxy=proxy, verify_tls=verify)
        current = target


async def read_answer(
    context: Context,
    response: aiohttp.ClientResponse,
    proxy: str | None,
    conditional: dict[str, str] | None,
    *,
    method: str = "GET",
) -> tuple[bytes, aiohttp.ClientResponse]:
    """The body of a final (not redirecting) answer, or the error its status means (a HEAD's
    answer has no body: its Content-Length is the resource's, not checked against the cap)."""
    settings = context.settings
    if conditional and response.status == NOT_MODIFIED:
        return b"", response
    kind = status_kind(response.status, settings.retry, via_proxy=proxy is not None)
    if kind is not None:
        raise HttpStatusError(
            response.status,
            kind=kind,
            retry_after_seconds=parse_retry_after(response.headers.get("Retry-After")),
        )
    if method == "HEAD":
        return b"", response
    cap = settings.max_body_bytes
    declared = response.content_length
    if declared is not None and declared <= cap and "Content-Encoding" not in response.headers:
        # The common case, read without another coroutine frame: no encoding, so
        # Content-Length is the decoded size.
        return await response.read(), response
    return await read_capped(response, cap), response


def refuse_body_elsewhere(
    status: int, method: str, first: URL, target: URL, payload: Any, data: bytes | None
) -> None:
    """Refuse a redirect that would send the request's body (a login form, an API token in a
    JSON payload) to another origin than the request's own (a 307/308, or a 301/302 of a PUT,
    PATCH or DELETE): the headers and cookies do not follow it (`keeps_credentials`), and
    neither may the body.

    Raises:
        RedirectRefusedError: naming the hop.
    """
    # What carries the body on: a 307/308 whatever the method, and a 301/302 of any method but
    # POST (browsers send a PUT, PATCH or DELETE on with its body; only a POST becomes a GET).
    keeps_body = status in (307, 308) or (status in (301, 302) and method != "POST")
    if not keeps_body or method in _NO_BODY:
        return
    if (payload is None and data is None) or keeps_credentials(first, target):
        return
    raise RedirectRefusedError(
        f"redirect to {redact(str(target))}: a {status} would send the {method} body to "
        "another origin"
    )


def keeps_credentials(first: URL, hop: URL) -> bool:
    """Whether a hop to `hop` of a request first sent to `first` may carry the task's headers
    and cookies (Authorization, Cookie, API keys): only to the same origin, or to the same host
    upgraded from http to https on the default ports. A change of host, port or scheme
    otherwise drops them (Scrapy's CVE-2024-1968: Authorization kept on a redirect to http or
    to another port of the host)."""
    if hop.raw_host != first.raw_host:
        return False
    if hop.scheme == first.scheme:
        return hop.port == first.port
    return (first.scheme, first.port, hop.scheme, hop.port) == ("http", 80, "https", 443)


def redirect_target(current: URL, location: str) -> URL:
    """Where `Location` sends a request to `current`, resolved as a browser resolves it.

    Raises:
        RedirectRefusedError: naming the hop when it is no http(s) URL (`file:`, `ftp:`, ...).
    """
    resolved = resolve_link(str(current), location)
    if resolved is None:
        raise RedirectRefusedError(f"redirect to {redact(location)!r}: not an http(s) URL")
    return request_url(resolved)


async def gate_hop(
    context: Context,
    route: Route,
    params: dict[str, Any],
    target: URL,
    *,
    proxy: str | None,
    verify_tls: bool,
) -> None:
    """Refuse a redirect hop before it is sent: out of a crawl task's scope, or disallowed by
    robots.txt of its host (fetched and cached as for any host, through the same route).

    Raises:
        RedirectRefusedError: the crawl's scope or patterns refuse the hop.
        DisallowedError: robots.txt of the hop's host disallows it.
        RobotsUnavailableError: that robots.txt cannot be read (transient).
        AddressRefusedError: the hop's host is an internal address the route may not reach.
    """
    where = f"redirect to {redact(str(target))}"
    try:
        reason = redirect_refusal(params, str(target), target.raw_host or "")
    except ValueError as exc:
        reason = str(exc)
    if reason is not None:
        raise RedirectRefusedError(f"{where}: {reason}")
    if context.polite is not None:
        try:
            with route.guarding(target, where):
                await context.polite.check(
                    route.session,
                    target,
                    proxy=proxy,
                    verify_tls=verify_tls,
                    route=route,
                )
        except (DisallowedError, RobotsUnavailableError) as exc:
            raise type(exc)(f"{where}: {exc}") from None
