"""One page of the run's browser over the DevTools protocol (`devtools`): every request it, its
frames and its workers make paused and handed to the router, a navigation awaited until its
load event, its DOM serialised.

A page is a target of a browser context, attached in flat mode (its commands and events carry
its session's id). Its out-of-process frames and its workers are attached automatically, paused
until their own requests are intercepted too: a request no session intercepts would go to the
browser's nowhere proxy and fail (`browser`), so nothing leaves unseen either way.
"""

import asyncio
import base64
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from scrapeflow_dagster.engine.render.devtools import BrowserError, DevToolsPipe

# Playwright's default viewport, which the stored DOMs were rendered at before: what a page
# lays out (and lazily loads) depends on it.
VIEWPORT = {"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": False}
# Before any of a document's scripts: service workers are never registered (their requests
# would not be the page's), as Playwright's `service_workers="block"` does.
_NO_SERVICE_WORKERS = (
    "if (self.ServiceWorkerContainer) ServiceWorkerContainer.prototype.register ="
    " async () => { throw new DOMException('service workers are blocked', 'SecurityError'); };"
)
# Every request held (`Fetch.enable`), and every frame or worker of another process attached
# and kept waiting until its own requests are held too (`Target.setAutoAttach`).
_HOLD_EVERY_REQUEST = {"patterns": [{"urlPattern": "*"}]}
_ATTACH_CHILDREN = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
# What a refusal tells the browser (the page's scripts see a network error).
ABORT_REASONS = {"blockedbyclient": "BlockedByClient", "aborted": "Aborted"}


class PausedRequest:
    """A request of the page held by the browser until `fulfill` or `abort` answers it."""

    def __init__(self, page: "BrowserPage", session_id: str, params: dict[str, Any]) -> None:
        request = params["request"]
        self._page = page
        self._session_id = session_id
        self._id: str = params["requestId"]
        self.url: str = request["url"] + request.get("urlFragment", "")
        self.method: str = request["method"]
        # Lower-cased names, as HTTP/2 sends them and Playwright hands them over.
        self.headers = {name.lower(): value for name, value in request["headers"].items()}
        self.resource_type: str = params.get("resourceType", "Other").lower()
        self.frame_id: str = params.get("frameId", "")
        self.post_data = _post_data(request)

    def is_main_navigation(self) -> bool:
        """Whether this is a navigation of the page's main frame (its own document, or the
        page leaving it)."""
        return self.resource_type == "document" and self.frame_id == self._page.main_frame_id

    async def fulfill(self, status: int, headers: dict[str, str], body: bytes) -> None:
        """Answer with `status`, `headers` and `body` (the page sees it as the server's)."""
        await self._page.pipe.send(
            "Fetch.fulfillRequest",
            {
                "requestId": self._id,
                "responseCode": status,
                "responseHeaders": [{"name": k, "value": v} for k, v in headers.items()],
                "body": base64.b64encode(body).decode(),
            },
            self._session_id,
        )

    async def abort(self, reason: str) -> None:
        """Fail it with `reason` (a key of `ABORT_REASONS`): a network error for the page."""
        await self._page.pipe.send(
            "Fetch.failRequest",
            {"requestId": self._id, "errorReason": ABORT_REASONS[reason]},
            self._session_id,
        )


def _post_data(request: dict[str, Any]) -> bytes | None:
    """The request's body as sent (its entries' bytes; the text form is lossy for binary)."""
    entries = request.get("postDataEntries")
    if entries:
        return b"".join(base64.b64decode(entry.get("bytes", "")) for entry in entries)
    text = request.get("postData")
    return None if text is None else text.encode()


RequestHandler = Callable[[PausedRequest], Awaitable[None]]


class BrowserPage:
    """A page open in a browser context (see the module); `open` makes one, `close` ends it."""

    def __init__(self, pipe: DevToolsPipe, target_id: str, session_id: str) -> None:
        self.pipe = pipe
        self.target_id = target_id
        self.session_id = session_id
        self.main_frame_id = target_id  # a page's main frame has its target's id
        self.url = "about:blank"
        self._on_request: RequestHandler | None = None
        self._children: set[str] = set()
        self._loaded: set[str] = set()  # loader ids whose load event came
        self._load = asyncio.Event()
        self._gone: str | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    async def open(cls, pipe: DevToolsPipe, context_id: str, user_agent: str) -> "BrowserPage":
        """A new blank page in the browser context `context_id`, its requests held for
        `intercept`'s handler, its scripts seeing `user_agent`.

        Raises:
            BrowserError: the browser failed (or is gone).
        """
        created = await pipe.send(
            "Target.createTarget", {"url": "about:blank", "browserContextId": context_id}
        )
        target_id = created["targetId"]
        attached = await pipe.send(
            "Target.attachToTarget", {"targetId": target_id, "flatten": True}
        )
        page = cls(pipe, target_id, attached["sessionId"])
        pipe.on(page.session_id, page._event)
        try:
            await page._prepare(page.session_id, user_agent)
        except BaseException:  # cancelled too: the target goes with it
            await asyncio.shield(page.close())
            raise
        return page

    async def _prepare(self, session_id: str, user_agent: str) -> None:
        send = self.pipe.send
        await asyncio.gather(
            send("Fetch.enable", _HOLD_EVERY_REQUEST, session_id),
            send("Page.enable", None, session_id),
            send("Page.setLifecycleEventsEnabled", {"enabled": True}, session_id),
            send(
                "Page.addScriptToEvaluateOnNewDocument", {"source": _NO_SERVICE_WORKERS}, session_id
            ),
            send("Emulation.setUserAgentOverride", {"userAgent": user_agent}, session_id),
            send("Emulation.setDeviceMetricsOverride", VIEWPORT, session_id),
            send(
                "Target.setAutoAttach",
                _ATTACH_CHILDREN,
                session_id,
            ),
        )

    def intercept(self, handler: RequestHandler) -> None:
        """Hand every request of the page (its frames and workers too) to `handler`, which
        must answer each (`fulfill` or `abort`)."""
        self._on_request = handler

    def _event(
        self,
        method: str,
        params: dict[str, Any],
        session_id: str | None = None,
        handler: RequestHandler | None = None,
    ) -> None:
        session = session_id or self.session_id
        # The page's own requests go to the handler of the moment they were made; a frame's or
        # worker's to the handler of the document it was attached under: a request of a
        # document the page has left never reaches the next document's handler.
        owner = self._on_request if session_id is None else handler
        if method == "Fetch.requestPaused":
            self._spawn(self._paused(PausedRequest(self, session, params), owner))
        elif method == "Page.lifecycleEvent":
            if params.get("name") == "load" and params.get("frameId") == self.main_frame_id:
                self._loaded.add(params.get("loaderId", ""))
                self._load.set()
        elif method == "Page.frameNavigated":
            frame = params["frame"]
            if frame.get("parentId") is None and session == self.session_id:
                self.url = frame["url"] + frame.get("urlFragment", "")
        elif method == "Page.navigatedWithinDocument":  # history.pushState, a fragment
            if params.get("frameId") == self.main_frame_id:
                self.url = params["url"]
        elif method == "Page.javascriptDialogOpening":
            # An alert, confirm or prompt would hold the page's scripts (and its load event)
            # until answered: dismissed at once, as Playwright does with no dialog handler.
            self._spawn(self._dismiss_dialog(session))
        elif method == "Target.attachedToTarget":
            kind = params.get("targetInfo", {}).get("type", "")
            self._spawn(self._attach_child(params["sessionId"], kind, owner))
        elif method == "Target.detachedFromTarget":
            child = params.get("sessionId", "")
            self._children.discard(child)
            self.pipe.on(child, None)
        elif method in ("Inspector.detached", "Inspector.targetCrashed"):
            if session == self.session_id:
                self._gone = params.get("reason") or "the page crashed"
                self._load.set()

    async def _dismiss_dialog(self, session_id: str) -> None:
        with contextlib.suppress(BrowserError):
            await self.pipe.send("Page.handleJavaScriptDialog", {"accept": False}, session_id)

    async def _attach_child(
        self, session_id: str, kind: str, handler: RequestHandler | None
    ) -> None:
        # A frame in a process of its own, or a worker: its requests intercepted as the
        # page's before it runs (it waits for the debugger until then); one whose
        # interception could not be set up is never let run (its page times out).
        self._children.add(session_id)
        self.pipe.on(session_id, lambda m, p: self._event(m, p, session_id, handler))
        try:
            # A dedicated worker's requests are its page's (held by the page's session: a
            # worker's session has no Fetch domain); any other target's are held by its own.
            if kind != "worker":
                await self.pipe.send("Fetch.enable", _HOLD_EVERY_REQUEST, session_id)
            if kind == "iframe":  # its documents' scripts meet the same rules as the page's
                await self.pipe.send("Page.enable", None, session_id)
                await self.pipe.send(
                    "Page.addScriptToEvaluateOnNewDocument",
                    {"source": _NO_SERVICE_WORKERS},
                    session_id,
                )
        except BrowserError:
            return  # gone already, or not intercepted: left waiting, it sends nothing
        # Its own frames and workers, where it may have some (a worker's session may not
        # know the command: then it has none to attach, and a nested one's requests would
        # go nowhere, to the browser's nowhere proxy).
        with contextlib.suppress(BrowserError):
            await self.pipe.send(
                "Target.setAutoAttach",
                _ATTACH_CHILDREN,
                session_id,
            )
        with contextlib.suppress(BrowserError):
            await self.pipe.send("Runtime.runIfWaitingForDebugger", None, session_id)

    async def _paused(self, request: PausedRequest, handler: RequestHandler | None) -> None:
        if handler is None:
            with contextlib.suppress(BrowserError):
                await request.abort("aborted")
            return
        await handler(request)

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def goto(self, url: str, timeout: float) -> None:
        """Navigate the page to `url` and wait for its load event.

        Raises:
            TimeoutError: no load event within `timeout` seconds.
            BrowserError: the navigation failed (its network error), or the page crashed.
        """
        async with asyncio.timeout(timeout):
            navigated = await self.pipe.send(
                "Page.navigate", {"url": url, "frameId": self.main_frame_id}, self.session_id
            )
            if navigated.get("errorText"):
                raise BrowserError(navigated["errorText"])
            loader = navigated.get("loaderId", "")
            while loader not in self._loaded:
                if self._gone is not None:
                    raise BrowserError(self._gone)
                self._load.clear()
                await self._load.wait()

    async def content(self) -> str:
        """The page's DOM serialised (doctype and root element: what Playwright's
        `page.content()` gave, measured equal), by the browser itself: no script of the page
        can change what it reads, and no script world is made for it (one made per document
        stayed in the renderer, measured: a third of its growth over a context's pages).

        Raises:
            BrowserError: it could not be read (the page crashed, the browser is gone).
        """
        document = await self.pipe.send("DOM.getDocument", {"depth": 0}, self.session_id)
        serialised = await self.pipe.send(
            "DOM.getOuterHTML", {"nodeId": document["root"]["nodeId"]}, self.session_id
        )
        return str(serialised["outerHTML"])

    @property
    def usable(self) -> bool:
        """Whether the page can be used again (it did not crash, its browser is there)."""
        return self._gone is None and self.pipe.connected

    async def blank(self, timeout: float) -> None:
        """Leave the current document for a blank one (the page is kept for the next
        document: its renderer, its interception and its settings stay); what the document
        still had under way is aborted.

        Raises:
            TimeoutError: the blank page did not load within `timeout` seconds.
            BrowserError: the page crashed, or its browser is gone.
        """
        self._on_request = None
        await self.goto("about:blank", timeout)

    def forget(self) -> None:
        """Stop handling the page's events and requests (its context is being disposed of,
        which closes it; or it is closed next)."""
        self._on_request = None
        self._gone = self._gone or "closed"
        for session in (self.session_id, *self._children):
            self.pipe.on(session, None)
        for task in list(self._tasks):
            task.cancel()

    async def close(self) -> None:
        """Close the page; its requests still held are dropped with it (idempotent)."""
        self.forget()
        with contextlib.suppress(BrowserError):
            await self.pipe.send("Target.closeTarget", {"targetId": self.target_id})
