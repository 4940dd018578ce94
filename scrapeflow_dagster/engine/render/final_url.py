"""The URL a task's page is rendered at: the real one its body came from, credentials and all.

`scrape` stores the page's final URL redacted (`token=***`, `***@host`): a page rendered there
would send `***` to its own site (its scripts read `location`, its relative requests resolve
against it) and would not even be of the site's origin when its userinfo was masked. The real
URL is not stored anywhere (it is a secret), so it is worked out again:

- what needs no request, `executors.stored_body.page_url` knows (the links of `pages` are
  resolved with it too): a stored URL without a mask is the real one, and the task's URL
  redacted is the task's URL (no redirect, or one to the same URL);
- else the page was redirected to a URL holding a credential the task's URL may not even hold
  (a signed URL): the task's URL is asked again by HEAD, through the gate with the task's own
  params, and the URL that answers is the page's when it redacts to the stored one. A HEAD
  moves no body and is the only way to learn what the redirect holds; it is needed only here.
"""

from typing import Any

from scrapeflow_dagster.engine.errors import (
    ErrorKind,
    RenderError,
    ScrapeError,
    TransientRenderError,
)
from scrapeflow_dagster.engine.gate.fetch import fetch
from scrapeflow_dagster.engine.redact import MASK, redact
from scrapeflow_dagster.engine.run.context import Context


async def real_final_url(context: Context, params: dict[str, Any], known_url: str) -> str:
    """The real URL the page of a task with `params` was answered from (see the module).

    Args:
        context: the run's context (its gate, for the HEAD).
        params: the task's params, as in its status file (the real URL, headers, trust).
        known_url: what the stored final URL says without a request
            (`executors.stored_body.page_url`): the real one, or the stored one still masked.

    Raises:
        TransientRenderError: the HEAD that would find the URL again failed for a while (a
            network error, a 5xx).
        RenderError: that HEAD was refused (a 4xx, robots.txt, the address guard) or the
            task's URL no longer leads to the stored final URL (scrape it again).
    """
    if MASK not in known_url:
        return known_url
    try:
        answer = await fetch(context, params, method="HEAD")
    except ScrapeError as exc:
        error = TransientRenderError if exc.kind == ErrorKind.TRANSIENT else RenderError
        raise error(
            f"the page's final URL holds a credential (stored redacted); the HEAD that would"
            f" find it again failed: {exc}"
        ) from None
    if redact(answer.final_url) != known_url:
        raise RenderError(
            f"the page's final URL holds a credential (stored redacted) and the task's URL now"
            f" leads to {redact(answer.final_url)}, not {known_url}: scrape it again"
        )
    return answer.final_url
