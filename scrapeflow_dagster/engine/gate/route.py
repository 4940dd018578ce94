"""How one task's requests go out: the session (public trust gets the guarded one) and the
address guard's scope around each request."""

import contextlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import aiohttp
from yarl import URL

from scrapeflow_dagster.engine.polite.addresses import AddressGuard
from scrapeflow_dagster.engine.run.context import Context
from scrapeflow_dagster.engine.state.trust import INTRANET, PUBLIC, trust_of


class Route(NamedTuple):
    """The way out of one task (or one sitemap file): its session, its guard, and whether it
    is an intranet route (the guard lets it reach internal addresses)."""

    session: aiohttp.ClientSession
    guard: AddressGuard | None
    intranet: bool

    def guarding(self, url: URL, what: str) -> contextlib.AbstractContextManager[None]:
        """The guard's scope for a request to `url` (nothing to check on an intranet route).

        Raises:
            AddressRefusedError: `url`'s host is an internal IP literal the route may not reach.
        """
        if self.guard is None or self.intranet:
            return contextlib.nullcontext()
        return self.guard.guarding(url.raw_host or "", task_internal=False, what=what)

    async def after(self, answered: URL) -> "Route":
        """The route of the hops after one answered from `answered`'s host: an intranet route
        stays one only while internal addresses answer its hops; a redirect a public server
        sends is a URL learned from a public page, so it must be public."""
        if not self.intranet or self.guard is None or await self.reached_intranet(answered):
            return self
        return Route(self.guard.session or self.session, self.guard, False)

    async def reached_intranet(self, final_url: URL) -> bool:
        """Whether a page fetched on this route and answered from `final_url` is an intranet
        page, whose links may then lead inside (a public page's links may not)."""
        if not self.intranet or self.guard is None:
            return False
        return await self.guard.is_internal_host(final_url.raw_host or "")


async def route_of(context: Context, url: URL, params: Mapping[str, Any]) -> Route:
    """The route of a request for `url` whose task has `params` (its `trust`, see `trust`).

    Raises:
        ValueError: naming the `trust` param when it holds an unknown value.
        RuntimeError: the context has no session.
    """
    session = context.unguarded_session
    if session is None and isinstance(context.session, aiohttp.ClientSession):
        session = context.session  # a Context built by hand, as scrapeflow's were
    if session is None:
        raise RuntimeError("a request needs an aiohttp session in its context")
    trust = trust_of(params)
    guard = context.guard if context.guard is not None and context.guard.enabled else None
    if guard is None:
        # No guard: every route may go anywhere; a page still counts as intranet only when its
        # task was trusted so, so that turning the guard on later changes no stored trust.
        return Route(session, None, trust == INTRANET)
    if trust == PUBLIC:
        return Route(guard.session or session, guard, False)
    if trust == INTRANET or await guard.is_internal_host(url.raw_host or ""):
        return Route(session, guard, True)
    return Route(guard.session or session, guard, False)
