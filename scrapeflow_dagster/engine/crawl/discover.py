"""`discover`: the links of parsed pages become new tasks (the one function both drivers call).

For each parent whose `pages` step succeeded and whose links were not taken in yet, every link
(as the page links it, resolved as a browser resolves it: the URL the new task requests and
the frontier stores) is judged (`scope.Rules`), deduplicated by the fingerprint of its
canonical form (as task keys are) against every task of the data dir and within the batch,
counted against its crawl's
`max_pages`, and recorded as a frontier row. A link that a fresh robots.txt cached by the runs
disallows for our User-Agent is recorded `disallowed` and never becomes a task: in daemon
mode its scrape would end DISALLOWED, unmaterialised, and hold back `validation` and `pages`
for its whole run. Discovery never fetches robots.txt (no copy cached: the run checks).

The whole discovery is first written as a batch file, then applied (tasks stored, rows spooled
for DuckDB, parents marked): a kill at any point is finished by the next discovery, and running
it again over the same parents adds nothing.
"""

import dataclasses
import logging
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from scrapeflow_dagster.engine.crawl import journal
from scrapeflow_dagster.engine.crawl.scope import (
    ADDED,
    DISALLOWED,
    KNOWN,
    OUT_OF_SCOPE,
    OVER_BUDGET,
    Rules,
    identify,
)
from scrapeflow_dagster.engine.errors import StatusFileError
from scrapeflow_dagster.engine.gate.trust import (
    FROM_LINK,
    INTRANET_PAGE,
    PUBLIC,
    inherited_trust,
    learned,
)
from scrapeflow_dagster.engine.history import FrontierRow, Ledger
from scrapeflow_dagster.engine.polite.robots import RobotsRules, cached_rules
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.state.files import is_status_name, load_status
from scrapeflow_dagster.engine.state.layout import DataLayout
from scrapeflow_dagster.engine.state.params import CrawlSettings, crawl_settings
from scrapeflow_dagster.engine.state.schema import (
    STATUS_SUFFIX,
    is_success,
    output_of,
    parse_stamp,
    utc_now,
)
from scrapeflow_dagster.engine.tasks.adding import add_tasks
from scrapeflow_dagster.engine.tasks.intake import TaskSpec
from scrapeflow_dagster.engine.tasks.keys import (
    SHORT_FINGERPRINT,
    LinkIdentity,
    request_fingerprint,
    short_fingerprint_of_key,
)

logger = logging.getLogger(__name__)

PAGES_EXECUTOR = "pages"
SCRAPE_EXECUTOR = "scrape"


@dataclass(frozen=True)
class Parent:
    """A parsed page whose links are to be taken in."""

    key: str
    seed_host: str  # the host of its own URL (the seed's, within host scope)
    settings: CrawlSettings
    links: tuple[str, ...]
    trust: str = PUBLIC  # what its links inherit (`gate.trust`)

    @property
    def crawl(self) -> str:
        """The crawl it belongs to: its seed's key (a seed's own key)."""
        return self.settings.crawl or self.key


@dataclass(frozen=True)
class Discovery:
    """What one `discover` call did."""

    batch: journal.FrontierBatch | None  # None: no parent had links to take in
    parents: int  # parents whose links were taken in now
    outcomes: dict[str, int]  # links per outcome

    @property
    def keys(self) -> list[str]:
        """The keys of the tasks added (the driver makes them partitions and runs them)."""
        return list(self.batch.keys) if self.batch is not None else []


def discover(
    layout: DataLayout,
    keys: Iterable[str],
    *,
    ledger: Ledger,
    executor: str = PAGES_EXECUTOR,
    now: datetime | None = None,
    settings: ScrapeSettings | None = None,
    streamed_by: str | None = None,
    memo: "DiscoveryMemo | None" = None,
) -> Discovery:
    """Take in the links of `keys` whose `executor` step succeeded and that were not taken in.

    Keys whose page is not parsed (yet) are left for a later call; tasks that are not part of
    a crawl (`max_depth` 0 and no `crawl`) are marked without a row. New tasks get the crawl
    settings of their parent with `depth` + 1, `parent` and `crawl`, and the trust the parent's
    page hands its links (`gate.trust`: public unless `scrape` fetched it from an internal
    address for an intranet task). Batches left unapplied by a killed discovery are applied
    first.

    Args:
        layout: the data dir (status files, the frontier's files).
        keys: candidate parents.
        ledger: where new tasks and frontier rows are recorded for DuckDB (flushed here).
        executor: the executor whose output holds `links`.
        now: the discovery time recorded on rows (default now).
        settings: the runs' settings: their User-Agent and politeness say which links the
            robots.txt copies they cached disallow (default: the defaults runs use).
        streamed_by: the run that takes the new tasks into its own pass (a crawl streamed
            through one run): the batch says so from its first write, so no other driver
            (the frontier sensor) runs them too.
        memo: kept by a caller that discovers again and again in one process (a crawl
            streamed through one run); default: the folder is read afresh.

    Returns:
        The batch applied (its `keys` are the new tasks; the driver calls
        `journal.finish_batch` once they are partitions with runs), and counts.

    Raises:
        OSError: when the data dir cannot be read or written (nothing is lost: the batch is
            applied by the next discovery).
        ValueError: naming a frontier batch file that cannot be read.
    """
    memo = memo if memo is not None else DiscoveryMemo()
    with journal.frontier_lock(layout):
        for batch in journal.batches(layout):
            if not batch.applied:
                memo.refresh(layout)
                _apply(layout, batch, ledger, memo.keys)
        expanded = memo.expanded_keys(layout)
        todo = [k for k in dict.fromkeys(keys) if k not in expanded]
        parents, not_crawled = _read_parents(layout, todo, executor)
        if not parents and not not_crawled:
            return Discovery(None, 0, {})
        robots = _Robots(layout.status_dir, settings or ScrapeSettings())
        memo.refresh(layout)
        batch = _plan(layout, parents, now or utc_now(), robots, memo)
        batch.parents += not_crawled
        batch.streamed_by = streamed_by
        journal.save_batch(layout, batch)
        _apply(layout, batch, ledger, memo.keys)
    return Discovery(batch, len(parents), dict(Counter(row["outcome"] for row in batch.rows)))


def _read_parents(
    layout: DataLayout, keys: list[str], executor: str
) -> tuple[list[Parent], list[str]]:
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


def known_fingerprints(layout: DataLayout) -> set[str]:
    """The short request fingerprints of every stored task: from its key when it was derived
    from the request, else from its params (read once, then cached in the frontier dir)."""
    memo = DiscoveryMemo()
    with journal.frontier_lock(layout):  # the refresh may append to the hand keys' cache
        memo.refresh(layout)
    return memo.known


class DiscoveryMemo:
    """What one process's successive discoveries reuse: a crawl streamed through one run
    discovers every few pages, and each discovery used to read every stored task's name.
    On a folder of 100,000 tasks (2026-11-27, tmpfs) that took 329 ms per discovery; a
    refresh after 20 new tasks takes 83 ms (the listing and set operations).

    `refresh` lists the status folder (one listing, so a task another process stored is seen
    as before) and reads only the names it has not seen; a name gone since rebuilds it all.
    Link identities are pure functions of the link and are kept across calls (bounded). The
    frontier's `expanded.txt` and `added.tsv` are read as they grow (`journal.JournalTail`).
    """

    MAX_IDENTITIES = 200_000

    def __init__(self) -> None:
        self.keys: set[str] = set()  # every stored task's key
        self.known: set[str] = set()  # their short request fingerprints (where readable)
        self.identities: dict[object, LinkIdentity | None] = {}
        self._names: set[str] = set()
        self._unread: set[str] = set()  # hand-given keys whose params could not be read yet
        self._expanded_tail = journal.JournalTail(journal.EXPANDED_NAME)
        self._expanded: set[str] = set()
        self._added_tail = journal.JournalTail(journal.ADDED_NAME)
        self._added: set[str] = set()
        self._sizes: dict[str, int] = {}

    def expanded_keys(self, layout: DataLayout) -> set[str]:
        """`journal.expanded_keys`, read as the file grows (the caller does not change it)."""
        restarted, lines = self._expanded_tail.read(layout)
        if restarted:
            self._expanded = set()
        journal.take_expanded_lines(self._expanded, lines)
        return self._expanded

    def crawl_sizes(self, layout: DataLayout) -> dict[str, int]:
        """`journal.crawl_sizes`, read as the file grows (a copy: the caller counts on it)."""
        restarted, lines = self._added_tail.read(layout)
        if restarted:
            self._added, self._sizes = set(), {}
        journal.take_added_lines(self._sizes, self._added, lines)
        return dict(self._sizes)

    def refresh(self, layout: DataLayout) -> None:
        """Bring `keys` and `known` up to the status folder as it is now."""
        status_dir = layout.status_dir
        try:
            names = set(os.listdir(status_dir))
        except FileNotFoundError:
            names = set()
        # Set operations over the listing (C speed); only names that changed are looked at.
        if any(is_status_name(name) for name in self._names - names):
            # A task was removed: its fingerprint may be gone with it.
            self.keys, self.known, self._names, self._unread = set(), set(), set(), set()
        new = names - self._names
        self._names = names
        cut = len(STATUS_SUFFIX)
        added = {name[:-cut] for name in new if is_status_name(name)}
        self.keys |= added
        todo = added | self._unread
        if len(self.identities) > self.MAX_IDENTITIES:
            self.identities.clear()
        if not todo:
            return
        hand: list[str] = []
        for key in todo:
            fingerprint = short_fingerprint_of_key(key)
            if fingerprint is None:
                hand.append(key)
            else:
                self.known.add(fingerprint)
        self._unread = set()
        if not hand:
            return
        cached = journal.hand_key_fingerprints(layout)
        fresh: dict[str, str] = {}
        for key in hand:
            fingerprint = cached.get(key)
            if fingerprint is None:
                fingerprint = _fingerprint_from_params(status_dir, key)
                if fingerprint is None:
                    self._unread.add(key)
                    continue
                fresh[key] = fingerprint
            self.known.add(fingerprint)
        journal.note_hand_keys(layout, fresh)


def _fingerprint_from_params(status_dir: Path, key: str) -> str | None:
    try:
        status = load_status(status_dir, key)
        params = status.get("params") or {} if status else {}
        body = params.get("post_payload")
        method = "POST" if body is not None else "GET"
        return request_fingerprint(str(params.get("url")), method=method, body=body)[
            :SHORT_FINGERPRINT
        ]
    except (StatusFileError, ValueError, TypeError):
        return None  # unreadable or without a valid URL: nothing a link could duplicate


class _Robots:
    """robots.txt as the runs cached it, read once per origin for one discovery."""

    def __init__(self, status_dir: Path, settings: ScrapeSettings) -> None:
        self._status_dir = status_dir
        self._user_agent = settings.user_agent
        self._polite = settings.polite
        self._rules: dict[str, RobotsRules | None] = {}

    def disallows(self, link: LinkIdentity) -> bool:
        """Whether a fresh cached robots.txt disallows `link` (never when none is cached or
        robots.txt is not respected: the run decides then)."""
        if not self._polite.respect_robots_txt:
            return False
        origin = link.origin
        if origin not in self._rules:
            self._rules[origin] = cached_rules(
                self._status_dir, origin, max_age_seconds=self._polite.robots_max_age_seconds
            )
        rules = self._rules[origin]
        return rules is not None and not rules.allows(link.url, self._user_agent)


def _plan(
    layout: DataLayout, parents: list[Parent], now: datetime, robots: _Robots, memo: DiscoveryMemo
) -> journal.FrontierBatch:
    known = memo.known  # stored tasks: a planned one is known once it is stored, not before
    planned: set[str] = set()  # this batch's (a copy of `known` cost O(tasks) per discovery)
    sizes = memo.crawl_sizes(layout)
    batch = journal.FrontierBatch(id=journal.new_batch_id(), parents=[p.key for p in parents])
    stamp = now.isoformat()
    # Pages of a site repeat links (menus, footers): each is canonicalised and hashed once.
    identities = memo.identities
    rows = batch.rows
    for parent in parents:
        rules = Rules.of(parent.settings)
        crawl = parent.crawl
        child_depth = parent.settings.depth + 1
        budget = parent.settings.max_pages
        inherited = {
            **dataclasses.replace(
                parent.settings, depth=child_depth, parent=parent.key, crawl=crawl
            ).as_params(),
            **learned(parent.trust, FROM_LINK),
        }
        # What every row of this parent's links shares.
        common = {
            "crawl": crawl,
            "parent": parent.key,
            "depth": child_depth,
            "discovered_at": stamp,
        }
        for raw in parent.links:
            try:
                link = identities[raw]
            except KeyError:
                link = identities[raw] = identify(raw)
            except TypeError:  # not hashable: not a URL either
                link = None
            if link is None:
                rows.append({**common, "url": str(raw), "child": None, "outcome": OUT_OF_SCOPE})
                continue
            short = link.fingerprint[:SHORT_FINGERPRINT]
            outcome = rules.judge(
                link,
                seed_host=parent.seed_host,
                child_depth=child_depth,
                known=short in known or short in planned,
            )
            if outcome is None and robots.disallows(link):
                outcome = DISALLOWED  # before the budget: it never takes a place there
            # The seed is a task of its crawl too.
            if outcome is None and budget is not None and 1 + sizes.get(crawl, 0) >= budget:
                outcome = OVER_BUDGET
            # Stored and requested as the page links it; the canonical form only dedupes.
            rows.append(
                {
                    **common,
                    "url": link.url,
                    "canonical": link.canonical,
                    "child": link.key,
                    "outcome": outcome or ADDED,
                }
            )
            if outcome is not None:
                continue
            planned.add(short)
            sizes[crawl] = sizes.get(crawl, 0) + 1
            batch.children.append({"key": link.key, "params": {"url": link.url, **inherited}})
    batch.crawls = sorted({p.crawl for p in parents})
    return batch


def _apply(
    layout: DataLayout, batch: journal.FrontierBatch, ledger: Ledger, listed: set[str]
) -> None:
    """Store the batch's tasks, spool its rows, note the crawl sizes and mark its parents;
    each part is idempotent, so a batch applied twice (after a kill) changes nothing more."""
    path = journal.batch_path(layout, batch.id)
    specs = [
        TaskSpec(child["key"], child["params"], path, line)
        for line, child in enumerate(batch.children, start=1)
    ]
    # One listing of the status folder (the caller's, `listed`) rather than a lookup per new
    # task; a key another process stores after it is still never overwritten (`add_tasks`
    # only creates files).
    report = add_tasks(layout, specs, ledger=ledger, stored_keys=set(listed))
    stored = set(report.keys)
    crawl_of = {child["key"]: child["params"]["crawl"] for child in batch.children}
    stamps: dict[str, datetime] = {}  # a batch's rows share one time: parsed once
    for row in batch.rows:
        if row["outcome"] == ADDED and row["child"] not in stored:
            row["outcome"] = KNOWN  # another process stored that key first
        when = row["discovered_at"]
        if when not in stamps:
            stamps[when] = parse_stamp(when) or utc_now()
        ledger.record_frontier(
            FrontierRow(
                crawl=row["crawl"],
                parent=row["parent"],
                url=row["url"],
                canonical=row.get("canonical"),  # batches journaled before it lack it
                depth=row["depth"],
                outcome=row["outcome"],
                child=row["child"],
                discovered_at=stamps[when],
            )
        )
    ledger.flush()
    batch.outcomes = {}
    for row in batch.rows:
        counts = batch.outcomes.setdefault(str(row["depth"]), {})
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    journal.note_added(layout, ((crawl_of[key], key) for key in report.keys))
    journal.mark_expanded(layout, batch.parents)
    batch.keys = list(report.keys)
    batch.applied = True
    if not batch.keys:
        journal.finish_batch(layout, batch.id)
        return
    # Kept for the driver, which finishes it: it needs the keys, no longer what was planned.
    applied = dataclasses.replace(batch, children=[], rows=[])
    journal.save_batch(layout, applied)
