"""`/graphql/`: a page that loads its content by POST, as GraphQL and most JSON APIs of
single-page apps do: the HTTP body is a shell, and its script POSTs a JSON query to
`/graphql/api` (or to `?endpoint=URL`, another origin or an internal address) and writes the
answer's article titles (`article_title(i)`) into the page, or `failed` when nothing came back.

`/graphql/api` answers a POST of `{"query": ..., "variables": ...}` (400 for another body) with
`GRAPHQL_ARTICLES` titles, and CORS headers for any origin (a preflight too), so that a page of
another origin may read it; `/graphql/api?status=N` answers N with no body instead (a failing
API: `/graphql/?endpoint=/graphql/api%3Fstatus%3D503`). `GET /control/graphql` lists every
request the API saw, in order: `{"requests": [{"method", "content_type", "body"}]}` (the body
as text).
"""

import json

from aiohttp import web

GRAPHQL_ARTICLES = 3
# What the page's script sends (`variables.tag`: the page's `?tag=`, so a test knows its own).
GRAPHQL_QUERY = "{ articles { title } }"
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "content-type",
}


def article_title(i: int) -> str:
    """The title of article i, as the rendered page shows it."""
    return f"GraphQL article {i}"


_PAGE_JS = """
const query = new URLSearchParams(location.search);
const endpoint = query.get("endpoint") || "/graphql/api";
const root = document.getElementById("root");
fetch(endpoint, {
  method: "POST",
  headers: {"Content-Type": "application/json"},
  body: JSON.stringify({query: QUERY, variables: {tag: query.get("tag") || ""}}),
}).then(r => r.json()).then(answer => {
  for (const article of answer.data.articles) {
    const h2 = document.createElement("h2");
    h2.textContent = article.title;
    root.appendChild(h2);
  }
}).catch(() => { root.textContent = "failed"; });
"""


class GraphQL:
    """The `/graphql/` routes (see the module) and the API's requests seen."""

    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the site."""
        return [
            web.get("/graphql/", self.page),
            web.get("/graphql/page.js", self.script),
            web.route("*", "/graphql/api", self.api),
            web.get("/control/graphql", self.control),
        ]

    async def page(self, request: web.Request) -> web.Response:
        shell = (
            "<!DOCTYPE html>\n<html><head><title>GraphQL articles</title></head>\n"
            '<body><div id="root"></div>\n<script src="/graphql/page.js"></script>'
            "</body></html>\n"
        )
        return web.Response(text=shell, content_type="text/html")

    async def script(self, request: web.Request) -> web.Response:
        source = _PAGE_JS.replace("QUERY", json.dumps(GRAPHQL_QUERY))
        return web.Response(text=source, content_type="application/javascript")

    async def api(self, request: web.Request) -> web.Response:
        body = await request.text()
        self.seen.append(
            {"method": request.method, "content_type": request.content_type, "body": body}
        )
        if request.method == "OPTIONS":
            return web.Response(status=204, headers=_CORS)
        if request.query.get("status", "").isdigit():
            return web.Response(status=int(request.query["status"]), headers=_CORS)
        try:
            asked = json.loads(body) if request.method == "POST" else None
        except ValueError:
            asked = None
        if not isinstance(asked, dict) or "query" not in asked:
            return web.Response(status=400, text="POST a JSON query", headers=_CORS)
        articles = [{"title": article_title(i)} for i in range(GRAPHQL_ARTICLES)]
        return web.json_response({"data": {"articles": articles}}, headers=_CORS)

    async def control(self, request: web.Request) -> web.Response:
        return web.json_response({"requests": self.seen})
