"""The `render` executor: a page marked `render: true` run in a browser (`engine.render`), its
DOM stored as `<key>.render` for `pages` and extraction to read instead of the HTTP body.

The document is the body `scrape` stored: rendering fetches it no second time (a killed render
starts again from it), and every other request of the page goes through the gate. A task not
marked `render` (or whose body is not HTML) records `rendered: false` and costs nothing more.
A task marked `render: auto` is rendered where the run finds its URL pattern needs a browser
(`engine.render.choice`: a sample of the pattern rendered and compared with its HTTP body),
and what earlier runs learned (`engine.render.choice_store`) is where the run starts from; its
output carries the pattern's evidence (`pattern`), which DuckDB keeps per pattern.
"""

from scrapeflow_dagster.engine.errors import RenderError
from scrapeflow_dagster.engine.executors.pages import (
    DecodedPage,
    content_type_of,
    decode_html,
    is_html,
    parse_page,
)
from scrapeflow_dagster.engine.executors.stored_body import (
    keep_previous,
    page_url,
    read_body,
    rendered_path,
)
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.render.browser import browser_missing
from scrapeflow_dagster.engine.render.choice import Parsed
from scrapeflow_dagster.engine.render.choice_store import load_known, snapshot_of
from scrapeflow_dagster.engine.render.document import Rendered, render_document
from scrapeflow_dagster.engine.render.final_url import real_final_url
from scrapeflow_dagster.engine.render.routing import Document
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.atomic import write_bytes_atomic
from scrapeflow_dagster.engine.state.params import RENDER_AUTO, RENDER_OFF, render_mode
from scrapeflow_dagster.engine.state.schema import StatusData
from scrapeflow_dagster.engine.state.trust import INTRANET, INTRANET_PAGE, PUBLIC


@taskify
async def render(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Render the stored page of a task marked `render: true` in the run's browser (every
    request it makes through the gate) and store its DOM: `rendered`, the URL it ended at,
    whether its network `settled`, its requests (`fetched`, `blocked` by type, `refused` with
    the first refusals), the DOM's size and the seconds it took."""
    try:
        mode = render_mode(status["params"])
    except ValueError as exc:
        raise RenderError(str(exc)) from None
    if mode == RENDER_OFF:
        return {"rendered": False}
    scraped = status.get("scrape") or {}
    content_type = content_type_of(scraped.get("response_headers")) or "text/html"
    if not is_html(content_type):
        return {"rendered": False, "reason": f"not a page ({content_type})"}
    browser = context.browser
    if browser is None:
        raise RenderError(
            browser_missing(context.settings.render) or "this run has no browser to render pages in"
        )
    stored_url = scraped.get("final_url") or status["params"]["url"]
    # Judged by the URL's pattern (its host and path, as stored): no request made for a page
    # that is not rendered.
    decision = None
    if mode == RENDER_AUTO:
        # One read of a small file per run, at its first `render: auto` page.
        browser.choices.restore_once(lambda: load_known(snapshot_of(context.dir)))
        decision = await browser.choices.decide(stored_url)
    if decision is not None and not decision.render:
        pattern = browser.choices.evidence(stored_url)
        return {"rendered": False, "choice": decision.reason, "pattern": pattern}
    trust = INTRANET if scraped.get(INTRANET_PAGE) else PUBLIC
    learned = False
    try:
        # The real URL, not the stored (redacted) one: the page must see its own URL.
        known = page_url(status["params"], scraped.get("final_url"))
        url = await real_final_url(context, status["params"], known)
        document = Document(url, read_body(context, key), content_type)
        rendered = await render_document(context, browser, document, trust=trust)
        output = _stored(context, key, rendered)
        if decision is not None:
            output["choice"] = decision.reason
            if decision.compare:
                needed = browser.choices.learn(
                    stored_url, _parsed_body(document), _parsed_dom(rendered)
                )
                learned = True
                output["browser_needed"] = needed
            # After `learn`: what a compared render taught is in the evidence it carries.
            output["pattern"] = browser.choices.evidence(stored_url)
    finally:
        if decision is not None and decision.compare and not learned:
            browser.choices.forget_sample(stored_url)  # its turn goes to another page
    return output


def _stored(context: Context, key: str, rendered: Rendered) -> ExecutorOutput:
    """Store the rendered DOM of `key`; the step's output."""
    dom = rendered.html.encode()
    path = rendered_path(context, key)
    if context.settings.revisit.track and _differs(path, dom):
        # The DOM it replaces is kept to diff the page's change (`revisits`).
        keep_previous(path, context.settings.revisit.bodies_kept)
    write_bytes_atomic(path, dom)
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


def _differs(path: str, dom: bytes) -> bool:
    """Whether a DOM is stored at `path` and is not `dom`."""
    try:
        with open(path, "rb") as file:
            return file.read() != dom
    except FileNotFoundError:
        return False


def _parsed_body(document: Document) -> Parsed:
    """What the HTTP body alone gives `pages`."""
    page = decode_html(document.body, content_type=document.content_type)
    output = parse_page(page, document.url).output
    return Parsed(frozenset(output["links"]), output["text_bytes"])


def _parsed_dom(rendered: Rendered) -> Parsed:
    """What the rendered DOM gives `pages`."""
    output = parse_page(DecodedPage(rendered.html, "utf-8", "dom"), rendered.final_url).output
    return Parsed(frozenset(output["links"]), output["text_bytes"])
