"""The parents of a discovery: parsed pages whose links are to be taken in, read from their
status files."""

import logging
from dataclasses import dataclass

from scrapeflow_dagster.engine.crawl.scope import identify
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.state.files import load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import CrawlSettings, crawl_settings
from scrapeflow_dagster.engine.state.schema import is_success, output_of
from scrapeflow_dagster.engine.state.trust import INTRANET_PAGE, PUBLIC, inherited_trust

logger = logging.getLogger(__name__)

SCRAPE_EXECUTOR = "scrape"


@dataclass(frozen=True)
class Parent:
    """A parsed page whose links are to be taken in."""

    key: str
    seed_host: str  # the host of its own URL (the seed's, within host scope)
    settings: CrawlSettings
    links: tuple[str, ...]
    trust: str = PUBLIC  # what its links inherit (`state.trust`)

    @property
    def crawl(self) -> str:
        """The crawl it belongs to: its seed's key (a seed's own key)."""
        return self.settings.crawl or self.key


def read_parents(
    layout: DataLayout, keys: list[str], executor: str
) -> tuple[list[Parent], list[str]]:
    """The parents among `keys` whose `executor` step succeeded, and the keys of those that
    are no part of a crawl (or whose crawl settings do not parse): marked without a row."""
    parents: list[Parent] = []
    not_crawled: list[str] = []
    status_dir = layout.status_dir
    for key in keys:
        try:
            status = load_status(status_dir, key)
        except StatusFileError as exc:
            logger.warning("not taking links of %s: %s", key, exc)
            continue
        if status is None or not is_success(status, executor):
            continue
        params = status.get("params") or {}
        try:
            settings = crawl_settings(params)
        except ValueError as exc:
            logger.warning("not taking links of %s: %s", key, exc)
            not_crawled.append(key)
            continue
        own = identify(params.get("url"))
        if own is None or (settings.max_depth == 0 and settings.crawl is None):
            not_crawled.append(key)
            continue
        links = output_of(status, executor).get("links") or []
        # Only a page `scrape` fetched from an internal address on an intranet route hands
        # its links that trust; any other page's links must be public.
        intranet = output_of(status, SCRAPE_EXECUTOR).get(INTRANET_PAGE) is True
        parents.append(Parent(key, own.host, settings, tuple(links), inherited_trust(intranet)))
    return parents, not_crawled
