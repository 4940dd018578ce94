"""The `pages` executor: parse the stored HTML into title, links and text size."""

from selectolax.lexbor import LexborHTMLParser as HTMLParser
from yarl import URL

from scrapeflow_dagster.engine.executors.stored_body import read_body
from scrapeflow_dagster.engine.run.context import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.state.schema import StatusData

MAX_LINKS_KEPT = 100


def parse_html(body: bytes, base_url: str) -> ExecutorOutput:
    """Title, absolute links (deduplicated, first `MAX_LINKS_KEPT`) and text size of a page."""
    tree = HTMLParser(body)
    title_node = tree.css_first("title")
    base = URL(base_url)
    links: dict[str, None] = {}
    for node in tree.css("a[href]"):
        href = (node.attributes.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:")):
            continue
        try:
            links[str(base.join(URL(href)).with_fragment(None))] = None
        except ValueError:
            continue
    text = tree.body.text(separator=" ") if tree.body is not None else ""
    return {
        "title": title_node.text(strip=True) if title_node is not None else None,
        "link_count": len(links),
        "links": list(links)[:MAX_LINKS_KEPT],
        "text_bytes": len(text.encode()),
    }


@taskify
async def pages(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Parse the stored page: title, links and text size."""
    scraped = status.get("scrape") or {}
    base_url = scraped.get("final_url") or status["params"]["url"]
    return parse_html(read_body(context, key), base_url)
