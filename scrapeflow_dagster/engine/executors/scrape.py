"""The `scrape` executors: fetch a task's URL with retries and store the body as `<key>.scrape`."""

import asyncio
import contextlib
import functools
import hashlib
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.crawl.scope import redirect_refusal
from scrapeflow_dagster.engine.errors import (
    BlockedError,
    BodyTooLargeError,
    DisallowedError,
    ErrorKind,
    HttpStatusError,
    InvalidTaskError,
    ProxyError,
    RedirectRefusedError,
    RobotsUnavailableError,
    ScrapeError,
    TooManyRedirectsError,
)
from scrapeflow_dagster.engine.polite.addresses import AddressGuard
from scrapeflow_dagster.engine.redact import proxy_host, redact
from scrapeflow_dagster.engine.retry.requests import (
    as_scrape_error,
    backoff_seconds,
    parse_retry_after,
    retry_after_of,
    status_kind,
)
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.schema import StatusData, is_success
from scrapeflow_dagster.engine.tasks.keys import validate_url
from scrapeflow_dagster.engine.tasks.urls import request_url, resolve_link

ResponseCallback = Callable[[bytes], None]
NOT_MODIFIED = 304
_CHUNK_BYTES = 64 * 1024


class Fetched(NamedTuple):
    """A successful answer (a NamedTuple: built once per page, cheaper than a dataclass)."""

    body: bytes
    status: int
    headers: dict[str, str]
    final_url: str
    attempts: int
    proxy: str | None


async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes:
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


# Answers that send the client elsewhere (with a Location header).
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


async def _request_once(
    context: Context,
    route: "_Route",
    url: URL,
    params: dict[str, Any],
    proxy: str | None,
    conditional: dict[str, str] | None = None,
) -> tuple[bytes, aiohttp.ClientResponse]:
    """One try of a task's request, its redirects followed here (not by aiohttp) so that every
    hop passes the gate of a first request: the address guard, the hop's per-host slot and,
    before it is sent, robots.txt of its host and (for a crawl task) the crawl's scope.

    Returns:
        The body and the final response (its `url` is the last hop's).
    """
    session = route.session
    settings = context.settings
    payload = params.get("post_payload")
    method = "POST" if payload is not None else "GET"
    # True leaves TLS to the session's connector (`settings.verify_tls`); False turns it off.
    verify = bool(params.get("verify_tls", settings.verify_tls))
    current, hops = url, 0
    while True:
        # The task's headers and cookies (credentials, often) go to its own host only.
        own_host = current.raw_host == url.raw_host
        headers = params.get("headers") if own_host else None
        if conditional and own_host:
            headers = {**(headers or {}), **conditional}
        what = f"redirect to {redact(str(current))}" if hops else redact(str(current))
        polite = context.polite
        slot = None
        if polite is not None:
            host = f"{current.host}:{current.port}"  # politeness's `host_of`, without a call
            slot = polite.try_acquire(host) or await polite.acquire(host)
        try:
            with route.guarding(current, what):
                async with session.request(
                    method,
                    current,
                    json=payload if method == "POST" else None,
                    cookies=params.get("cookies") if own_host else None,
                    headers=headers,
                    proxy=proxy,
                    ssl=verify,
                    timeout=_timeout(settings.request_timeout_seconds),
                    allow_redirects=False,
                ) as response:
                    location = response.headers.get("Location")
                    if response.status in _REDIRECTS and location is not None:
                        target = _redirect_target(current, location)
                        # As browsers do: 303, and 301/302 after a POST, go on as a GET.
                        if response.status == 303 or (
                            method == "POST" and response.status in (301, 302)
                        ):
                            method = "GET"
                    else:
                        return await _read_answer(context, response, proxy, conditional)
        finally:
            if slot is not None:
                polite.release(slot)  # type: ignore[union-attr]
        hops += 1
        if hops > settings.max_redirects:
            raise TooManyRedirectsError(
                f"more than {settings.max_redirects} redirects (the last to {redact(str(target))})"
            )
        await _gate_hop(context, route, params, target, proxy=proxy, verify_tls=verify)
        current = target


async def _read_answer(
    context: Context,
    response: aiohttp.ClientResponse,
    proxy: str | None,
    conditional: dict[str, str] | None,
) -> tuple[bytes, aiohttp.ClientResponse]:
    """The body of a final (not redirecting) answer, or the error its status means."""
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
    cap = settings.max_body_bytes
    declared = response.content_length
    if declared is not None and declared <= cap and "Content-Encoding" not in response.headers:
        # The common case, read without another coroutine frame: no encoding, so
        # Content-Length is the decoded size.
        return await response.read(), response
    return await _read_capped(response, cap), response


def _redirect_target(current: URL, location: str) -> URL:
    """Where `Location` sends a request to `current`, resolved as a browser resolves it.

    Raises:
        RedirectRefusedError: naming the hop when it is no http(s) URL (`file:`, `ftp:`, ...).
    """
    resolved = resolve_link(str(current), location)
    if resolved is None:
        raise RedirectRefusedError(f"redirect to {redact(location)!r}: not an http(s) URL")
    return request_url(resolved)


async def _gate_hop(
    context: Context,
    route: "_Route",
    params: dict[str, Any],
    target: URL,
    *,
    proxy: str | None,
    verify_tls: bool,
) -> None:
    """Refuse a redirect hop before it is sent: out of a crawl task's scope, or disallowed by
    robots.txt of its host (fetched and cached as for any host).

    Raises:
        RedirectRefusedError: the crawl's scope or patterns refuse the hop.
        DisallowedError: robots.txt of the hop's host disallows it.
        RobotsUnavailableError: that robots.txt cannot be read (transient).
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
                    route.session, target, proxy=proxy, verify_tls=verify_tls
                )
        except (DisallowedError, RobotsUnavailableError) as exc:
            raise type(exc)(f"{where}: {exc}") from None


class _Route(NamedTuple):
    """How one task's requests go out: the session (public tasks get the guarded one) and the
    guard's check of each request's host."""

    session: aiohttp.ClientSession
    guard: AddressGuard | None
    task_internal: bool

    def guarding(self, url: URL, what: str) -> contextlib.AbstractContextManager[None]:
        """The guard's scope for a request to `url` (nothing to check for an intranet task).

        Raises:
            AddressRefusedError: `url`'s host is an internal IP literal the task may not reach.
        """
        if self.guard is None or self.task_internal:
            return contextlib.nullcontext()
        return self.guard.guarding(url.raw_host or "", task_internal=False, what=what)


async def _route_of(context: Context, url: URL) -> _Route:
    """The route of a task whose URL is `url` (see `_Route`)."""
    session = context.session
    if session is None:
        raise RuntimeError("scrape needs an aiohttp session in its context")
    guard = context.guard if context.guard is not None and context.guard.enabled else None
    if guard is None:
        return _Route(session, None, True)
    if await guard.is_internal_host(url.raw_host or ""):
        return _Route(session, guard, True)
    return _Route(guard.session or session, guard, False)


def _check_params(params: dict[str, Any]) -> URL:
    """Refuse params aiohttp would crash on, so they fail their task and not the whole run."""
    validate_url(params.get("url"))
    headers = params.get("headers")
    if headers is not None and not (
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
    ):
        # The values are not echoed: headers may carry credentials.
        raise InvalidTaskError("params['headers'] must be an object mapping names to strings")
    cookies = params.get("cookies")
    if cookies is not None and not isinstance(cookies, dict):
        raise InvalidTaskError("params['cookies'] must be an object")
    try:
        # Sent as a browser sends it: the task's URL keeps its escapes and query as written.
        return request_url(params["url"])
    except ValueError:
        raise InvalidTaskError(
            f"url {redact(str(params['url']))!r} is not a URL a browser could request"
        ) from None


async def fetch(
    context: Context,
    params: dict[str, Any],
    *,
    validate: ResponseCallback | None = None,
    conditional: dict[str, str] | None = None,
) -> Fetched:
    """Fetch `params["url"]` (a JSON POST when `params["post_payload"]` is set) with retries.

    Transient target errors are retried with exponential backoff and jitter (`Retry-After`
    honoured up to a cap); proxy errors and blocks are charged to the proxy and retried through
    another one, on a separate budget. `validate` may raise `RuntimeError` for a block page.
    With `conditional` headers (If-None-Match / If-Modified-Since), a 304 is an answer too: it
    comes back with an empty body and status 304.

    Raises:
        ScrapeError: the last failure, with `attempts` and `proxy_host` attributes set.
    """
    try:
        url = _check_params(params)
    except InvalidTaskError as exc:
        raise ScrapeError(str(exc)) from None
    provider = context.proxy_provider
    policy = context.settings.retry
    polite = context.polite
    route = await _route_of(context, url)
    verify = bool(params.get("verify_tls", context.settings.verify_tls))
    attempts = target_failures = proxy_failures = 0
    while True:
        proxy = provider.get_one_proxy(params.get("country")) if provider else None
        attempts += 1
        try:
            if provider is not None and proxy is None:
                # Going direct would expose our address to a site we chose to reach via proxies.
                raise ProxyError("no healthy proxy left in the pool (not going direct)")
            if proxy is not None and route.guard is not None:
                route.guard.exempt.add(URL(proxy).raw_host or "")  # resolved to reach the proxy
            if polite is not None:
                # robots.txt is read (once per origin) through this try's proxy, if any.
                with route.guarding(url, redact(str(url))):
                    await polite.check(route.session, url, proxy=proxy, verify_tls=verify)
            body, response = await _request_once(context, route, url, params, proxy, conditional)
            if validate is not None:
                try:
                    validate(body)
                except RuntimeError as exc:
                    raise BlockedError(redact(str(exc)) or "validation failed") from None
        except (ScrapeError, aiohttp.ClientError, TimeoutError) as raw:
            error = as_scrape_error(raw, via_proxy=proxy is not None)
            if isinstance(error, DisallowedError | RobotsUnavailableError):
                # Nothing was requested, and asking again in this run would get the same answer.
                error.attempts = attempts - 1
                raise error from None
            error.attempts = attempts
            error.proxy_host = proxy_host(proxy)
            if provider is not None and proxy is not None:
                provider.report_failure(proxy, error.kind)
            if error.kind in (ErrorKind.PROXY, ErrorKind.BLOCKED) and proxy is not None:
                proxy_failures += 1
                if proxy_failures <= policy.max_proxy_attempts:
                    continue
            elif error.kind == ErrorKind.TRANSIENT:
                target_failures += 1
                if target_failures < policy.max_attempts:
                    delay = backoff_seconds(
                        target_failures, policy, retry_after_seconds=retry_after_of(error)
                    )
                    await asyncio.sleep(delay)
                    continue
            raise error from None
        if provider is not None and proxy is not None:
            provider.report_success(proxy)
        headers = {k: response.headers.getone(k) for k in response.headers.keys()}
        return Fetched(body, response.status, headers, str(response.url), attempts, proxy)


def _store(context: Context, key: str, fetched: Fetched) -> ExecutorOutput:
    write_bytes_atomic(os.path.join(context.dir, f"{key}.scrape"), fetched.body)
    output: ExecutorOutput = {
        "size": len(fetched.body),
        "content": hashlib.md5(fetched.body).hexdigest(),
        "response_headers": fetched.headers,
        "http_status": fetched.status,
        "final_url": redact(fetched.final_url),
        "attempts": fetched.attempts,
    }
    if fetched.proxy:
        output["proxy"] = proxy_host(fetched.proxy)
    return output


def conditional_headers(context: Context, key: str, status: StatusData) -> dict[str, str]:
    """If-None-Match / If-Modified-Since from the last successful fetch of `key`, or nothing.

    Nothing when the run forces `scrape` (a forced re-fetch, e.g. after a block page, stays
    unconditional), for a POST, or when the stored body is gone (a 304 would leave no page).
    """
    forced = context.forced_executors
    previous = status.get("scrape")
    if "all" in forced or "scrape" in forced or not is_success(status, "scrape"):
        return {}
    if status["params"].get("post_payload") is not None or not isinstance(previous, dict):
        return {}
    if not os.path.exists(os.path.join(context.dir, f"{key}.scrape")):
        return {}
    stored = {k.lower(): v for k, v in (previous.get("response_headers") or {}).items()}
    headers = {}
    if stored.get("etag"):
        headers["If-None-Match"] = stored["etag"]
    if stored.get("last-modified"):
        headers["If-Modified-Since"] = stored["last-modified"]
    return headers


@taskify
async def scrape(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Fetch the task's URL and store the body as `<key>.scrape` (atomically).

    A re-fetch is conditional when the last response had an ETag or Last-Modified: a 304
    keeps the stored body and md5 and records `not_modified`.
    """
    conditional = conditional_headers(context, key, status)
    fetched = await fetch(context, status["params"], conditional=conditional)
    if conditional and fetched.status == NOT_MODIFIED:
        return {
            **status["scrape"],
            "http_status": NOT_MODIFIED,
            "body_http_status": status["scrape"].get("body_http_status")
            or status["scrape"].get("http_status"),
            "not_modified": True,
            "attempts": fetched.attempts,
        }
    return _store(context, key, fetched)


async def scrape_with_validation(
    context: Context,
    key: str | StatusData,
    status: StatusData | ResponseCallback | None = None,
    response_callback: ResponseCallback | None = None,
) -> ExecutorOutput:
    """Fetch like `scrape`, then let `response_callback` reject the body with `RuntimeError`.

    A rejected body (captcha, block page) is not stored; it counts as a block, so with a proxy
    provider the request is retried through another proxy. Call it as
    `(context, key, status, callback)` or, as scrapeflow's README does, `(context, status,
    callback)` from inside your own executor.
    """
    if not isinstance(key, str):  # the README's (context, status, callback) form
        status, response_callback, key = key, status, key["name"]  # type: ignore[assignment]
    assert isinstance(status, dict) and isinstance(key, str)
    callback = response_callback if callable(response_callback) else None
    return _store(context, key, await fetch(context, status["params"], validate=callback))
