"""`/docs/{n}`: a documentation site's shape, for crawl benchmarks against peers.

    depth 0   /docs/0       the front page: links to 20 sections and the general index
    depth 1   sections 1-20 and the general index (21): 12 chapters each; the index links to
              every chapter (240 links)
    depth 2   240 chapters (22-261): their topic page, the next chapter, their section, the
              front page; the chapters of section 1 also list every topic page (240 links)
    depth 3   240 topic pages (262-501): each links to one of 28 appendix pages
    depth 4   28 appendix pages (502-529): beyond a depth-3 crawl

A depth-3 crawl from `/docs/0` fetches 502 pages (and robots.txt). Every page also links to
a path robots.txt disallows (`/graph/private/`), another host, a fragment of itself, and
carries ~4 KB of text.
"""

from aiohttp import web

from scrapeflow_dagster.site.content.pages import conditional_response
from scrapeflow_dagster.site.crawling.graph import OFF_HOST, PRIVATE_PREFIX

SECTIONS = 20
CHAPTERS_PER_SECTION = 12
INDEX = SECTIONS + 1
FIRST_CHAPTER = INDEX + 1
CHAPTERS = SECTIONS * CHAPTERS_PER_SECTION
FIRST_TOPIC = FIRST_CHAPTER + CHAPTERS
FIRST_APPENDIX = FIRST_TOPIC + CHAPTERS
APPENDICES = 28
DOCS_SIZE = FIRST_APPENDIX + APPENDICES
# Pages within depth 3 of /docs/0: what a depth-3 crawl fetches.
WITHIN_DEPTH_3 = FIRST_APPENDIX
_FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. " * 50


def docs_links(n: int) -> list[int]:
    """The docs pages page `n` links to (in page order, repeats kept as on the page)."""
    if n == 0:
        return [*range(1, INDEX + 1)]
    if n <= SECTIONS:
        first = FIRST_CHAPTER + (n - 1) * CHAPTERS_PER_SECTION
        return [0, *range(first, first + CHAPTERS_PER_SECTION)]
    if n == INDEX:
        return [0, *range(FIRST_CHAPTER, FIRST_TOPIC)]
    if n < FIRST_TOPIC:
        chapter = n - FIRST_CHAPTER
        section = 1 + chapter // CHAPTERS_PER_SECTION
        links = [0, section, FIRST_TOPIC + chapter]
        if n + 1 < FIRST_TOPIC:
            links.append(n + 1)
        return links + (list(range(FIRST_TOPIC, FIRST_APPENDIX)) if section == 1 else [])
    if n < FIRST_APPENDIX:
        return [0, FIRST_APPENDIX + (n - FIRST_TOPIC) % APPENDICES]
    return [0]


def docs_body(n: int, host: str) -> bytes:
    """The HTML of docs page `n`."""
    hrefs = [f"/docs/{m}" for m in docs_links(n)]
    hrefs += [f"{PRIVATE_PREFIX}{n}", f"http://{OFF_HOST}/docs/{n}", "#top", f"/docs/{n}#top"]
    links = "".join(f'<li><a href="{h}">{h}</a></li>\n' for h in hrefs)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Docs {n}</title></head>\n'
        f'<body><h1 id="top">Docs {n}</h1>\n<p>{_FILLER}</p>\n<ul>\n{links}</ul>\n'
        "</body></html>\n"
    ).encode()


async def page(request: web.Request) -> web.Response:
    """Docs page `n` (404 past the site), with an ETag and a Last-Modified."""
    n = int(request.match_info["n"])
    if n >= DOCS_SIZE:
        raise web.HTTPNotFound(text=f"no docs page {n}: the site has {DOCS_SIZE}")
    return conditional_response(request, docs_body(n, request.host))
