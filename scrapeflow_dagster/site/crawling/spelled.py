"""`/spelled/`: links spelled the ways real sites spell them, and a page with many links.

`/spelled/` sets `<base href="/spelled/dir/">` and links, relative to that base, to targets
whose spelling a crawler must keep: escapes in the path (`%28`, `%29`, `%7E`), bare and
escaped query keys (`?time(3)`, `?q=is%3Aissue`), query order and repeats, `@` in a path, a
dot segment, an `<area>` link, and `/spelled/many`, which links to `/spelled/many/0` ...
`/spelled/many/{MANY_LINKS - 1}`, and a download (`/spelled/download/{name}`, not HTML).
Every other `/spelled/...` path answers a small page without
links. The site records each request target as it arrived, undecoded (`GET /control/spelled`).
"""

from aiohttp import web

MANY_LINKS = 1200
BASE_HREF = "/spelled/dir/"
# (href as written on /spelled/, the request target a browser sends for it)
SPELLED_LINKS = (
    ("Salt_%28cryptography%29", "/spelled/dir/Salt_%28cryptography%29"),
    ("item?time(3)", "/spelled/dir/item?time(3)"),
    ("search?q=is%3Aissue&b=2&a=1&a=0", "/spelled/dir/search?q=is%3Aissue&b=2&a=1&a=0"),
    ("%7Euser/@me", "/spelled/dir/%7Euser/@me"),
    ("list/python-dev@python.org/message/X/", "/spelled/dir/list/python-dev@python.org/message/X/"),
    ("../up/./there", "/spelled/up/there"),
    ("/spelled/many", "/spelled/many"),
)
AREA_LINK = ("map-target", "/spelled/dir/map-target")
# A download linked from /spelled/: fetched, never parsed as a page.
DOWNLOAD_LINK = ("/spelled/download/tool.py", "/spelled/download/tool.py")
# A link that fails (404), linked from /spelled/.
BROKEN_LINK = "/status/404?from=spelled"


def _html(title: str, body: str, head: str = "") -> web.Response:
    return web.Response(
        text=f"<!DOCTYPE html>\n<html><head><title>{title}</title>{head}</head>"
        f"<body>{body}</body></html>\n",
        content_type="text/html",
    )


class Spelled:
    """The `/spelled/` pages and the request targets they were asked for."""

    def __init__(self) -> None:
        self.targets: list[str] = []

    def forget(self) -> None:
        """Clear the recorded targets."""
        self.targets.clear()

    async def index(self, request: web.Request) -> web.Response:
        """The page of odd spellings, under a `<base href>`."""
        self.targets.append(request.raw_path)
        hrefs = [href for href, _ in SPELLED_LINKS] + [DOWNLOAD_LINK[0], BROKEN_LINK]
        links = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in hrefs)
        area = f'<map name="m"><area href="{AREA_LINK[0]}" alt="area"></map>'
        return _html("Spelled", f"<ul>\n{links}</ul>\n{area}", f'<base href="{BASE_HREF}">')

    async def many(self, request: web.Request) -> web.Response:
        """A page with `MANY_LINKS` links."""
        self.targets.append(request.raw_path)
        links = "".join(f'<a href="many/{n}">{n}</a>\n' for n in range(MANY_LINKS))
        return _html("Many links", links, '<base href="/spelled/">')

    async def download(self, request: web.Request) -> web.Response:
        """A file that is no page (`application/octet-stream`), with an HTML-looking body."""
        self.targets.append(request.raw_path)
        body = b'# <a href="/spelled/never-followed">not a link</a>\nprint("hello")\n'
        return web.Response(body=body, content_type="application/octet-stream")

    async def target(self, request: web.Request) -> web.Response:
        """Any other `/spelled/...` page: no links."""
        self.targets.append(request.raw_path)
        return _html("Spelled target", "<p>a target</p>")

    async def control(self, request: web.Request) -> web.Response:
        """The request targets asked for, in order, as they arrived."""
        return web.json_response({"targets": self.targets})
