"""`fetch`: one request with its retries, through the gate (what `scrape`, user executors and
the sitemap reader call)."""

import asyncio
from typing import Any

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.errors import (
    BlockedError,
    DisallowedError,
    ErrorKind,
    InvalidTaskError,
    ProxyError,
    RobotsUnavailableError,
    ScrapeError,
)
from scrapeflow_dagster.engine.gate.answer import Fetched, ResponseCallback
from scrapeflow_dagster.engine.gate.hops import request_once
from scrapeflow_dagster.engine.gate.route import route_of
from scrapeflow_dagster.engine.redact import proxy_host, redact
from scrapeflow_dagster.engine.retry.requests import (
    as_scrape_error,
    backoff_seconds,
    retry_after_of,
)
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.tasks.keys import validate_url
from scrapeflow_dagster.engine.tasks.urls import request_url


def check_params(params: dict[str, Any]) -> URL:
    """The URL to request for `params`, refusing params aiohttp would crash on, so they fail
    their task and not the whole run.

    Raises:
        InvalidTaskError: naming the param (never echoing header values: credentials).
    """
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
    method: str | None = None,
    data: bytes | None = None,
) -> Fetched:
    """Fetch `params["url"]` (a JSON POST when `params["post_payload"]` is set) with retries,
    through the gate: the address guard of the task's trust, robots.txt, host slots, redirects
    checked hop by hop, the body cap, the proxy.

    Transient target errors are retried with exponential backoff and jitter (`Retry-After`
    honoured up to a cap); proxy errors and blocks are charged to the proxy and retried through
    another one, on a separate budget. `validate` may raise `RuntimeError` for a block page.
    With `conditional` headers (If-None-Match / If-Modified-Since), a 304 is an answer too: it
    comes back with an empty body and status 304. `method` (default: POST with a payload, else
    GET) and `data` (a raw body, sent as given) are for requests that are not a task's own: a
    rendered page's subrequests, a user executor's `context.fetch`; a HEAD answer has no body.

    Raises:
        ScrapeError: the last failure, with `attempts` and `proxy_host` attributes set.
    """
    try:
        url = check_params(params)
        route = await route_of(context, url, params)
    except (InvalidTaskError, ValueError) as exc:
        raise ScrapeError(str(exc)) from None
    provider = context.proxy_provider
    policy = context.settings.retry
    polite = context.polite
    verify = bool(params.get("verify_tls", context.settings.verify_tls))
    attempts = target_failures = proxy_failures = 0
    while True:
        proxy = provider.get_one_proxy(params.get("country")) if provider else None
        attempts += 1
        try:
            if provider is not None and proxy is None:
                # Going direct would expose our address to a site we chose to reach via proxies.
                raise ProxyError("no healthy proxy left in the pool (not going direct)")
            if polite is not None:
                # robots.txt is read (once per origin) through this try's proxy, if any.
                with route.guarding(url, redact(str(url))):
                    await polite.check(
                        route.session,
                        url,
                        proxy=proxy,
                        verify_tls=verify,
                        route=route,
                    )
            body, response, final_route = await request_once(
                context, route, url, params, proxy, conditional, method=method, data=data
            )
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
        intranet = final_route.intranet and await final_route.reached_intranet(response.url)
        return Fetched(body, response.status, headers, str(response.url), attempts, proxy, intranet)
