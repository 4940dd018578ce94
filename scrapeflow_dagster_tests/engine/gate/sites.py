"""Real aiohttp sites for the gate's tests, whose routes a test sets and which count every
request by (Host, path)."""

from collections import Counter
from collections.abc import Callable

from aiohttp import web

Route = Callable[["Site", web.Request], web.StreamResponse]
Routes = dict[str, Route]


class Site:
    """A real aiohttp site whose routes a test sets, counting requests by (Host, path)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.routes: Routes = {}
        self.seen: Counter[tuple[str, str]] = Counter()
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://{self.address}:{self.port}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen[request.headers.get("Host", ""), request.path] += 1
        route = self.routes.get(request.path)
        return route(self, request) if route else web.Response(status=404)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def text(body: str, content_type: str = "text/plain", etag: str | None = None) -> Route:
    """`body`; with an `etag`, a 304 to a request that names it (If-None-Match)."""

    def answer(site: Site, request: web.Request) -> web.Response:
        if etag is not None and request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        headers = {"ETag": etag} if etag else {}
        return web.Response(text=body, content_type=content_type, headers=headers)

    return answer


def redirect(location: str) -> Route:
    return lambda site, request: web.Response(status=302, headers={"Location": location})


def urlset(*urls: str, etag: str | None = None) -> Route:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
    return text(xml, "application/xml", etag)


def index(*urls: str) -> Route:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    xml = f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'
    return text(xml, "application/xml")
