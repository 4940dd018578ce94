"""Trust comes from where a URL came from, not from the URL: the `trust` and `learned_from`
params, read and named here; the gate (`engine.gate.route`) acts on them.

A task a user added (task file, CLI, inbox) carries no `trust` param: its own URL decides, and
one on an internal address is an intranet task (intranet task lists keep working). A URL learned
from the web (a link, a redirect, a sitemap entry or child sitemap, a robots.txt `Sitemap:`
line) inherits the trust of what it was learned from, stored with the task as the `trust`
param: learned from a public page, it must be public whatever name it uses (`PUBLIC`); learned
from a page an intranet task fetched from an internal address, it may be internal
(`INTRANET`). `learned_from` says how (`link`, `sitemap`), for the reader.
"""

from collections.abc import Mapping
from typing import Any

TRUST = "trust"  # param: PUBLIC or INTRANET on learned tasks; absent on a user's own
LEARNED_FROM = "learned_from"  # param: how a learned task's URL was learned
PUBLIC = "public"
INTRANET = "intranet"
TRUSTS = (PUBLIC, INTRANET)
# How a URL was learned (the `learned_from` param).
FROM_LINK = "link"
FROM_SITEMAP = "sitemap"
# The scrape output field that says the page came from an internal address through an
# intranet route: what the page's links inherit (absent: public).
INTRANET_PAGE = "intranet"


def trust_of(params: Mapping[str, Any]) -> str | None:
    """The stored trust of a task (`PUBLIC`, `INTRANET`), None for a task a user added.

    Raises:
        ValueError: naming the param when it holds anything else (a typo must not open the
            guard, nor silently close it).
    """
    trust = params.get(TRUST)
    if trust is None:
        return None
    if trust not in TRUSTS:
        raise ValueError(f"{TRUST} must be one of {', '.join(TRUSTS)}, got {trust!r}")
    return str(trust)


def learned(trust: str, how: str) -> dict[str, str]:
    """The params a URL learned `how` (`FROM_LINK`, `FROM_SITEMAP`) from a source of `trust`
    carries."""
    return {TRUST: trust, LEARNED_FROM: how}


def inherited_trust(source_intranet: bool) -> str:
    """The trust of a URL learned from a source that was (or was not) an intranet page."""
    return INTRANET if source_intranet else PUBLIC
