"""The `scrape` executors: fetch a task's URL through the gate (`engine.gate`) and store the
body as `<key>.scrape`."""

import hashlib
import os

from scrapeflow_dagster.engine.executors.stored_body import keep_previous
from scrapeflow_dagster.engine.gate.answer import Fetched, ResponseCallback
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.gate.hops import NOT_MODIFIED
from scrapeflow_dagster.engine.redact import proxy_host, redact
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.params import RENDER_ON, render_mode
from scrapeflow_dagster.engine.state.schema import StatusData, is_success
from scrapeflow_dagster.engine.state.trust import INTRANET_PAGE

__all__ = [
    "Fetched",
    "ResponseCallback",
    "conditional_headers",
    "fetch",
    "scrape",
    "scrape_with_validation",
]


def _store(context: Context, key: str, fetched: Fetched, status: StatusData) -> ExecutorOutput:
    path = os.path.join(context.dir, f"{key}.scrape")
    md5 = hashlib.md5(fetched.body).hexdigest()
    if context.settings.revisit.track and _replaces_another(status, path, md5):
        # A new body: the one it replaces is kept to diff the page's change (`revisits`).
        keep_previous(path, context.settings.revisit.bodies_kept)
    write_bytes_atomic(path, fetched.body)
    output: ExecutorOutput = {
        "size": len(fetched.body),
        "content": md5,
        "response_headers": fetched.headers,
        "http_status": fetched.status,
        "final_url": redact(fetched.final_url),
        "attempts": fetched.attempts,
    }
    if fetched.proxy:
        output["proxy"] = proxy_host(fetched.proxy)
    if fetched.intranet:
        output[INTRANET_PAGE] = True  # its links may lead inside (`state.trust`)
    return output


def _replaces_another(status: StatusData, path: str, md5: str) -> bool:
    """Whether a body of `md5` replaces a different one stored at `path`: the last success's
    md5 says so, or, after a failure dropped it, the stored file's own (read only then). A
    task rendered every time keeps none: its DOM is what `pages` diffs."""
    try:
        if render_mode(status["params"]) == RENDER_ON:
            return False
    except ValueError:  # a bad `render` param: `pages` fails the task naming it
        pass
    previous = status.get("scrape")
    if is_success(status, "scrape") and isinstance(previous, dict):
        return previous.get("content") != md5
    try:
        with open(path, "rb") as file:
            return hashlib.md5(file.read()).hexdigest() != md5
    except FileNotFoundError:
        return False


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
    return _store(context, key, fetched, status)


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
    fetched = await fetch(context, status["params"], validate=callback)
    return _store(context, key, fetched, status)
