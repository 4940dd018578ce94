"""`/app/`: pages built by JavaScript, as single-page apps serve them: the HTTP body is a shell
(a title, an empty `<div id="root">` and a script), and what a reader or a crawler wants (text,
links) exists only once a browser has run the scripts.

`/app/` is the index: `app.js` fetches `/app/api/items.json` and writes one link per item to
`/app/item/{i}` (i in 0 .. `SCRIPTED_ITEMS`-1). `/app/item/{i}` is an item's shell: `item.js`
fetches `/app/api/item/{i}.json` and writes its name (`<h1>`), its text, a link to the next item
(so a crawl from item 0 reaches every item) and one back to the index. Every shell also has an
image (`/app/logo.png`) that a renderer blocking images never requests.

Three pages are there to be hard: `/app/slow` fills its root from an API answering after
`?seconds=` (default 2) seconds; `/app/never-settles` writes its text at once, then polls
`/app/api/tick` every 100 ms for ever and holds a long poll of `/app/api/hang` (answered after
30 s, then asked again): its network never goes quiet; `/app/internal?target=URL`
makes its script request `URL` (an internal address, for a public copy of this site) and write
what came back, or `blocked`, into the page.
"""

import asyncio
import html
import json

from aiohttp import web

SCRIPTED_ITEMS = 12
# A 1x1 transparent PNG: what `/app/logo.png` serves.
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def item_name(i: int) -> str:
    """The name item i's page shows once rendered."""
    return f"Scripted item {i}"


def _shell(title: str, script: str, data: str = "") -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>\n"
        f'<body><div id="root"{data}></div><img src="/app/logo.png" alt="">\n'
        f'<script src="/app/{script}"></script></body></html>\n'
    )


_APP_JS = """
fetch("/app/api/items.json").then(r => r.json()).then(items => {
  const root = document.getElementById("root");
  const h1 = document.createElement("h1");
  h1.textContent = "Scripted shop";
  root.appendChild(h1);
  const ul = document.createElement("ul");
  for (const item of items) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = item.href;
    a.textContent = item.name;
    li.appendChild(a);
    ul.appendChild(li);
  }
  root.appendChild(ul);
});
"""

_ITEM_JS = """
const root = document.getElementById("root");
fetch("/app/api/item/" + root.dataset.item + ".json").then(r => r.json()).then(item => {
  const h1 = document.createElement("h1");
  h1.textContent = item.name;
  const p = document.createElement("p");
  p.className = "text";
  p.textContent = item.text;
  root.append(h1, p);
  for (const [href, label] of item.links) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = label;
    root.appendChild(a);
  }
});
"""

_SLOW_JS = """
const seconds = new URLSearchParams(location.search).get("seconds") || "2";
fetch("/app/api/slow?seconds=" + seconds).then(r => r.text()).then(text => {
  const p = document.createElement("p");
  p.className = "late";
  p.textContent = text;
  document.getElementById("root").appendChild(p);
});
"""

_NEVER_SETTLES_JS = """
const root = document.getElementById("root");
const p = document.createElement("p");
p.className = "ticks";
p.textContent = "Live ticker";
root.appendChild(p);
setInterval(() => fetch("/app/api/tick").then(r => r.text()).then(t => { p.dataset.last = t; }),
            100);
const poll = () => fetch("/app/api/hang").then(r => r.text()).then(poll, poll);
poll();
"""

_INTERNAL_JS = """
const target = new URLSearchParams(location.search).get("target");
const root = document.getElementById("root");
fetch(target).then(r => r.text()).then(
  text => { root.textContent = "got: " + text; },
  () => { root.textContent = "blocked"; });
"""

_SCRIPTS = {
    "app.js": _APP_JS,
    "item.js": _ITEM_JS,
    "slow.js": _SLOW_JS,
    "never-settles.js": _NEVER_SETTLES_JS,
    "internal.js": _INTERNAL_JS,
}


class Scripted:
    """The `/app/` routes (see the module)."""

    def __init__(self) -> None:
        self.ticks = 0

    def routes(self) -> list[web.RouteDef]:
        """The routes to add to the site."""
        return [
            web.get("/app/", self.index),
            web.get(r"/app/item/{i:\d+}", self.item),
            web.get("/app/slow", self.slow),
            web.get("/app/never-settles", self.never_settles),
            web.get("/app/internal", self.internal),
            web.get("/app/api/items.json", self.items_json),
            web.get(r"/app/api/item/{i:\d+}.json", self.item_json),
            web.get("/app/api/slow", self.slow_api),
            web.get("/app/api/tick", self.tick),
            web.get("/app/api/hang", self.hang),
            web.get("/app/logo.png", self.logo),
            web.get("/app/{script:[a-z-]+\\.js}", self.script),
        ]

    async def index(self, request: web.Request) -> web.Response:
        return web.Response(text=_shell("Scripted shop", "app.js"), content_type="text/html")

    async def item(self, request: web.Request) -> web.Response:
        i = int(request.match_info["i"])
        if i >= SCRIPTED_ITEMS:
            raise web.HTTPNotFound()
        page = _shell(f"Item {i}", "item.js", f' data-item="{i}"')
        return web.Response(text=page, content_type="text/html")

    async def slow(self, request: web.Request) -> web.Response:
        return web.Response(text=_shell("Slow page", "slow.js"), content_type="text/html")

    async def never_settles(self, request: web.Request) -> web.Response:
        page = _shell("Never settles", "never-settles.js")
        return web.Response(text=page, content_type="text/html")

    async def internal(self, request: web.Request) -> web.Response:
        return web.Response(text=_shell("Internal probe", "internal.js"), content_type="text/html")

    async def items_json(self, request: web.Request) -> web.Response:
        items = [{"href": f"/app/item/{i}", "name": item_name(i)} for i in range(SCRIPTED_ITEMS)]
        return web.json_response(items)

    async def item_json(self, request: web.Request) -> web.Response:
        i = int(request.match_info["i"])
        if i >= SCRIPTED_ITEMS:
            raise web.HTTPNotFound()
        links = [["/app/", "Back to the shop"]]
        if i + 1 < SCRIPTED_ITEMS:
            links.append([f"/app/item/{i + 1}", "Next item"])
        body = {"name": item_name(i), "text": f"Item {i} is built by a script.", "links": links}
        return web.Response(text=json.dumps(body), content_type="application/json")

    async def slow_api(self, request: web.Request) -> web.Response:
        try:
            seconds = float(request.query.get("seconds", "2"))
        except ValueError:
            raise web.HTTPBadRequest(text="seconds must be a number") from None
        await asyncio.sleep(min(max(seconds, 0.0), 60.0))
        return web.Response(text="Arrived late")

    async def tick(self, request: web.Request) -> web.Response:
        self.ticks += 1
        return web.Response(text=str(self.ticks))

    async def hang(self, request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return web.Response(text="nothing new")

    async def logo(self, request: web.Request) -> web.Response:
        return web.Response(body=_PNG, content_type="image/png")

    async def script(self, request: web.Request) -> web.Response:
        source = _SCRIPTS.get(request.match_info["script"])
        if source is None:
            raise web.HTTPNotFound()
        return web.Response(text=source, content_type="application/javascript")
