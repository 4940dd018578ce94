"""The `extract` executor: the task's selector set run on its stored page, as a step of its own
(for chains that want it apart from `pages`, which runs it on every page it parses)."""

from scrapeflow_dagster.engine.executors.extraction import extraction_of
from scrapeflow_dagster.engine.executors.pages import (
    content_type_of,
    decode_html,
    is_html,
    page_base,
)
from scrapeflow_dagster.engine.executors.stored_body import page_url, read_body
from scrapeflow_dagster.engine.run.context import (
    Context,
    ExecutorOutput,
    reads_stored_only,
    taskify,
)
from scrapeflow_dagster.engine.state.schema import StatusData


@reads_stored_only
@taskify
async def extract(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Run the task's selector set (its `extract` param) on its stored page; `extracted` is
    None for a task without one, or a body that is no HTML."""
    scraped = status.get("scrape") or {}
    content_type = content_type_of(scraped.get("response_headers"))
    if not is_html(content_type):
        return {"extracted": None}
    page = decode_html(read_body(context, key), content_type=content_type)
    base = page_base(page.text, page_url(status["params"], scraped.get("final_url")))
    return {"extracted": extraction_of(context, status, page.text, base)}
