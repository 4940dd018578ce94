"""The site's deterministic pages: their links, their filler text, `/page/{n}` and the sitemaps
listing them all (`/sitemap.txt`, `/sitemap.xml`)."""

import hashlib
import random
from collections import Counter

from aiohttp import web

LINKS_PER_PAGE = 10
SITEMAP_NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
_PAGE_TAIL = b"</p>\n</body></html>\n"
_WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()

# Deterministic hashing from the site's seed: the same seed gives the same links and faults.
_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def seeded_hash(*values: int) -> int:
    """A 64-bit hash of `values`, the same on every run and platform (unlike `hash`).

    Args:
        values: integers to mix, e.g. a purpose tag, the seed and a page number.

    Returns:
        An integer in [0, 2**64).
    """
    h = 0
    for value in values:
        h = _splitmix64(h ^ (value & _MASK64))
    return h


def page_links(n: int, *, pages: int, seed: int) -> list[int]:
    """The pages `/page/{n}` links to, in order: `n + 1` first, then pseudo-random others.

    Args:
        n: the page number.
        pages: how many pages the site has.
        seed: the site's seed.

    Returns:
        Up to `LINKS_PER_PAGE` distinct page numbers, none equal to `n`.
    """
    links = [(n + 1) % pages] if pages > 1 else []
    for i in range(4 * LINKS_PER_PAGE):
        if len(links) >= min(LINKS_PER_PAGE, pages - 1):
            break
        m = seeded_hash(2, seed, n, i) % pages
        if m != n and m not in links:
            links.append(m)
    return links


def _filler(size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words: list[str] = []
    total = 0
    while total < size:
        words.append(rng.choice(_WORDS))
        total += len(words[-1]) + 1
    return " ".join(words).encode()[:size]


# Every page of the site was last modified at this fixed time (an HTTP date).
_MODIFIED = "Sun, 01 Nov 2026 00:00:00 GMT"


def conditional_response(request: web.Request, body: bytes) -> web.Response:
    """`body` as HTML with an ETag (its md5) and a fixed Last-Modified, or a bodiless 304 when
    the request's If-None-Match or If-Modified-Since matches them.

    Args:
        request: the request, read for its validators.
        body: the HTML the page would send.

    Returns:
        A 200 response with the body, or a 304 with the same validators and no body.
    """
    validators = {"ETag": f'"{hashlib.md5(body).hexdigest()}"', "Last-Modified": _MODIFIED}
    if (
        request.headers.get("If-None-Match") == validators["ETag"]
        or request.headers.get("If-Modified-Since") == _MODIFIED
    ):
        return web.Response(status=304, headers=validators)
    return web.Response(body=body, content_type="text/html", charset="utf-8", headers=validators)


class Pages:
    """The `count` pages of one site, each `page_bytes` long, linked and filled by `seed`."""

    def __init__(self, *, count: int, page_bytes: int, seed: int) -> None:
        self.count = count
        self.page_bytes = page_bytes
        self.seed = seed
        self._filler = _filler(page_bytes, seed)
        self.cached_answers: Counter[int] = Counter()  # status -> count, for `/cached/{n}`

    def body(self, n: int) -> bytes:
        """The HTML of page `n`: `page_bytes` long unless its head alone is longer."""
        links = "".join(
            f'<li><a href="/page/{m}">Page {m}</a></li>'
            for m in page_links(n, pages=self.count, seed=self.seed)
        )
        head = (
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {n}</title></head>\n'
            f"<body><h1>Page {n}</h1>\n<ul>{links}</ul>\n<p>"
        ).encode()
        return head + self._filler[: self.page_bytes - len(head) - len(_PAGE_TAIL)] + _PAGE_TAIL

    def response(self, n: int) -> web.Response:
        """Page `n` as a 200 HTML response."""
        return web.Response(body=self.body(n), content_type="text/html", charset="utf-8")

    def number(self, request: web.Request) -> int:
        """The page number `{n}` of the request's path.

        Raises:
            web.HTTPNotFound: when the site has no such page.
        """
        n = int(request.match_info["n"])
        if n >= self.count:
            raise web.HTTPNotFound(text=f"no page {n}: the site has {self.count} pages")
        return n

    async def get_page(self, request: web.Request) -> web.Response:
        return self.response(self.number(request))

    async def get_cached_page(self, request: web.Request) -> web.Response:
        """Page `n` with an ETag and a Last-Modified, answering 304 to a matching
        If-None-Match or If-Modified-Since (as a CDN or a well-behaved server would)."""
        response = conditional_response(request, self.body(self.number(request)))
        self.cached_answers[response.status] += 1
        return response

    async def cached_control(self, request: web.Request) -> web.Response:
        """How many `/cached/{n}` answers were full pages and how many were 304s."""
        return web.json_response({str(k): v for k, v in sorted(self.cached_answers.items())})

    async def sitemap(self, request: web.Request) -> web.Response:
        base = f"{request.scheme}://{request.host}"
        text = "".join(f"{base}/page/{n}\n" for n in range(self.count))
        return web.Response(text=text, content_type="text/plain")

    async def sitemap_xml(self, request: web.Request) -> web.Response:
        """Every page, absolute on the request's Host header, as an XML sitemap (a urlset)."""
        base = f"{request.scheme}://{request.host}"
        urls = "".join(f"<url><loc>{base}/page/{n}</loc></url>" for n in range(self.count))
        text = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {SITEMAP_NS}>{urls}</urlset>\n'
        return web.Response(text=text, content_type="application/xml")
