"""The executors shipped after `scrape`: block/captcha detection and HTML parsing.

Each reads the body `scrape` stored (`<key>.scrape`) and stores a small output in the status.
"""

import re

from selectolax.lexbor import LexborHTMLParser as HTMLParser
from yarl import URL

from scrapeflow_dagster.engine.errors import BlockedError, ScrapeError
from scrapeflow_dagster.engine.executor import Context, ExecutorOutput, taskify
from scrapeflow_dagster.engine.status import StatusData

# Phrases of block and captcha pages; matched case-insensitively in the first bytes only.
BLOCK_MARKERS = re.compile(
    rb"captcha|i'?m not a robot|unusual traffic|access denied|are you a human|verify you are human",
    re.IGNORECASE,
)
_SCAN_BYTES = 64 * 1024
MAX_LINKS_KEPT = 100


def _body(context: Context, key: str) -> bytes:
    try:
        return (context.dir / f"{key}.scrape").read_bytes()
    except FileNotFoundError:
        raise ScrapeError(f"no stored body for task {key!r}: run scrape first") from None


def check_page(body: bytes, *, min_bytes: int = 64) -> None:
    """Raise `BlockedError` for an empty, tiny, captcha or block page."""
    if len(body) < min_bytes:
        raise BlockedError(f"page is only {len(body)} bytes")
    match = BLOCK_MARKERS.search(body[:_SCAN_BYTES])
    if match:
        raise BlockedError(f"block page: found {match.group().decode(errors='replace')!r}")


@taskify
async def validation(context: Context, key: str, status: StatusData) -> ExecutorOutput:
    """Reject block and captcha pages that answered 200 (a failed validation is a block)."""
    body = _body(context, key)
    check_page(body)
    return {"checked_bytes": min(len(body), _SCAN_BYTES), "verdict": "ok"}


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
    return parse_html(_body(context, key), base_url)
