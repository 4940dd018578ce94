"""`/graph/{n}`: a link graph to crawl, its `/graph/private/` section and the robots.txt fencing it.

The graph is a complete ternary tree of `size` nodes: the children of n are 3n+1, 3n+2 and 3n+3
(those that exist), the parent of n > 0 is (n-1)//3. Each page links to its children, its parent
and the root in every form a crawler must resolve (relative, `./`, absolute on the request's own
host, `../`, fragments), and to links it must drop (a disallowed path, another host, mailto,
javascript, a bare fragment).
"""

import asyncio
from collections.abc import Sequence

from aiohttp import web

from scrapeflow_dagster.site.content.pages import conditional_response

FANOUT = 3
DEFAULT_GRAPH_SIZE = 1093  # (3**7 - 1) // 2: a complete tree down to depth 6
PRIVATE_PREFIX = "/graph/private/"
OFF_HOST = "elsewhere.invalid"


def graph_children(n: int, *, size: int) -> list[int]:
    """The children of node `n` in a graph of `size` nodes: 3n+1, 3n+2, 3n+3 (those < size)."""
    return [c for c in range(FANOUT * n + 1, FANOUT * n + FANOUT + 1) if c < size]


def graph_parent(n: int) -> int | None:
    """The parent of node `n`, None for the root."""
    return None if n == 0 else (n - 1) // FANOUT


def graph_depth(n: int) -> int:
    """How many edges lie between node `n` and the root 0."""
    depth = 0
    while n > 0:
        n = (n - 1) // FANOUT
        depth += 1
    return depth


def nodes_within_depth(depth: int, *, size: int = DEFAULT_GRAPH_SIZE) -> list[int]:
    """The nodes at most `depth` edges from the root: 0 .. (3**(depth+1)-1)//2 - 1 (capped)."""
    return list(range(min(size, (FANOUT ** (depth + 1) - 1) // 2)))


class Graph:
    """The graph pages of one site: `size` nodes, each answered after `delay_seconds`."""

    def __init__(
        self,
        *,
        size: int,
        delay_seconds: float,
        crawl_delay_seconds: float | None,
        sitemaps: Sequence[str] = (),
    ):
        if size < 1 or delay_seconds < 0 or (crawl_delay_seconds or 0) < 0:
            raise ValueError(
                "need graph_size >= 1, graph_delay_seconds >= 0 and crawl_delay_seconds >= 0, "
                f"got {size}, {delay_seconds} and {crawl_delay_seconds}"
            )
        self.size = size
        self.delay_seconds = delay_seconds
        self.crawl_delay_seconds = crawl_delay_seconds
        # What robots.txt announces as `Sitemap:`: a path is made absolute on the request's Host
        # header, an absolute URL (another host's, for cross-submission) is kept as written.
        self.sitemaps = tuple(sitemaps)

    def body(self, n: int, *, host: str) -> bytes:
        """The HTML of node `n` as served to a request whose Host header is `host`."""
        c1, c2, c3 = (graph_children(n, size=self.size) + [None, None, None])[:FANOUT]
        hrefs = [
            f"{c1}" if c1 is not None else None,
            f"./{c2}#part" if c2 is not None else None,
            f"http://{host}/graph/{c3}#top" if c3 is not None else None,
            f"../graph/{graph_parent(n)}" if n > 0 else None,
            "/graph/0#top",
            f"{PRIVATE_PREFIX}{n}",
            f"http://{OFF_HOST}/graph/{n}",
            "mailto:someone@example.com",
            "javascript:void(0)",
            "#footer",
        ]
        links = "".join(f'<li><a href="{h}">{h}</a></li>\n' for h in hrefs if h is not None)
        return (
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Graph {n}</title></head>\n'
            f"<body><h1>Graph {n}</h1>\n<ul>\n{links}</ul>\n"
            f'<p id="footer">depth {graph_depth(n)}</p>\n</body></html>\n'
        ).encode()

    def number(self, request: web.Request) -> int:
        """The node `{n}` of the request's path.

        Raises:
            web.HTTPNotFound: when the graph has no such node.
        """
        n = int(request.match_info["n"])
        if n >= self.size:
            raise web.HTTPNotFound(text=f"no graph node {n}: the graph has {self.size} nodes")
        return n

    async def page(self, request: web.Request) -> web.Response:
        """Node `n`, with an ETag and a Last-Modified (304 to a matching conditional request)."""
        n = self.number(request)
        if self.delay_seconds > 0:
            # So that a crawler's requests overlap and the in-flight counts mean something.
            await asyncio.sleep(self.delay_seconds)
        return conditional_response(request, self.body(n, host=request.host))

    async def private(self, request: web.Request) -> web.Response:
        """A page robots.txt disallows: a polite crawler never fetches it."""
        n = request.match_info["n"]
        return web.Response(
            text=f"<!DOCTYPE html>\n<html><head><title>Private {n}</title></head>"
            "<body><h1>robots.txt disallows this page</h1></body></html>\n",
            content_type="text/html",
        )

    async def robots(self, request: web.Request) -> web.Response:
        """`User-agent: *`, `Disallow: /graph/private/` and, when set, `Crawl-delay` and a
        `Sitemap` line per sitemap."""
        lines = ["User-agent: *", f"Disallow: {PRIVATE_PREFIX}"]
        if self.crawl_delay_seconds is not None:
            lines.append(f"Crawl-delay: {self.crawl_delay_seconds:g}")
        for sitemap in self.sitemaps:
            url = f"http://{request.host}{sitemap}" if sitemap.startswith("/") else sitemap
            lines.append(f"Sitemap: {url}")
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")
