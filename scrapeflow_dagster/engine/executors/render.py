"""The `render` executor: a page marked `render: true` run in a browser (`engine.render`), its
DOM stored as `<key>.render` for `pages` and extraction to read instead of the HTTP body.

The document is the body `scrape` stored: rendering fetches it no second time (a killed render
starts again from it), and every other request of the page goes through the gate. A task not
marked `render` (or whose body is not HTML) records `rendered: false` and costs nothing more.
"""

import os

from scrapeflow_dagster.engine.errors import RenderError
from scrapeflow_dagster.engine.executors.pages import content_type_of, is_html
from scrapeflow_dagster.engine.executors.stored_body import read_body
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.render.browser import browser_missing
from scrapeflow_dagster.engine.render.document import render_document
from scrapeflow_dagster.engine.render.routing import Document
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.params import render_requested
from scrapeflow_dagster.engine.state.schema import StatusData
from scrapeflow_dagster.engine.state.trust import INTRANET, INTRANET_PAGE, PUBLIC

RENDERED_SUFFIX = ".render"


def rendered_path(context: Context, key: str) -> str:
    """Where the rendered DOM of `key` is stored."""
    return os.path.join(context.dir, f"{key}{RENDERED_SUFFIX}")


@taskify
async def render(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Render the stored page of a task marked `render: true` in the run's browser (every
    request it makes through the gate) and store its DOM: `rendered`, the URL it ended at,
    whether its network `settled`, its requests (`fetched`, `blocked` by type, `refused` with
    the first refusals), the DOM's size and the seconds it took."""
    try:
        wanted = render_requested(status["params"])
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    if not wanted:
        return {"rendered": False}
    scraped = status.get("scrape") or {}
    content_type = content_type_of(scraped.get("response_headers")) or "text/html"
    if not is_html(content_type):
        return {"rendered": False, "reason": f"not a page ({content_type})"}
    if context.browser is None:
        raise RenderError(browser_missing() or "this run has no browser to render pages in")
    document = Document(
        scraped.get("final_url") or status["params"]["url"], read_body(context, key), content_type
    )
    trust = INTRANET if scraped.get(INTRANET_PAGE) else PUBLIC
    rendered = await render_document(context, context.browser, document, trust=trust)
    dom = rendered.html.encode()
    write_bytes_atomic(rendered_path(context, key), dom)
    requests = rendered.requests
    return {
        "rendered": True,
        "final_url": redact(rendered.final_url),
        "settled": rendered.settled,
        "dom_bytes": len(dom),
        "fetched": requests.fetched,
        "blocked": requests.blocked,
        "refused": requests.refused,
        "refusals": requests.refusals,
        "render_seconds": round(rendered.seconds, 3),
    }
