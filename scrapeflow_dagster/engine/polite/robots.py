"""robots.txt: fetched once per origin (scheme, host, port), parsed with protego, cached on disk.

What an answer means follows RFC 9309 and Google's crawler: a 2xx body is the rules; a 4xx
other than 429 means there are none (everything allowed); a 5xx, a 429 or a network error
means the rules are unknown, and then the whole origin counts as disallowed for this run
(nothing is fetched) but the tasks fail as transient, so a later run tries again. An older
cached copy, when there is one, is used instead of that "unknown" (RFC 9309, 2.4).

Where the final answer came from is kept too (`intranet`: an internal address answered it on
an intranet route, every hop before it internal as well; see `state.trust`): the `Sitemap:` lines
of a robots.txt an intranet seed's server redirected to a public host are public, as that host's
links are. Only http(s) origins are asked; any other is unreachable without a request.

The cache is `<directory>/<origin>.json` (`origin`, `fetched_at`, `status`, `body`,
`intranet`; a copy without `intranet`, from an older version, counts as public), written
atomically and re-fetched once older than `robots_max_age_seconds`; a per-origin lock file makes
one process fetch while others sharing the folder wait and read its copy. A run keeps it in
`<status dir>/.polite/robots/`; `cached_rules` reads it there without ever fetching (discovery
uses it to drop links robots.txt disallows before they become tasks).
"""

import asyncio
import contextlib
import fcntl
import logging
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import aiohttp
import orjson
from protego import Protego  # type: ignore[import-untyped]
from yarl import URL

from scrapeflow_dagster.engine.errors import ProxyError
from scrapeflow_dagster.engine.polite.hosts import HostSlots
from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.settings import PoliteSettings
from scrapeflow_dagster.engine.state.atomic import write_json_atomic
from scrapeflow_dagster.engine.state.schema import parse_stamp, stamp, utc_now
from scrapeflow_dagster.engine.tasks.urls import host_port, request_url, resolve_link

logger = logging.getLogger(__name__)

_LOCK_POLL_SECONDS = 0.02
# RFC 9309, 2.3.1.2: crawlers follow at least five consecutive redirects for robots.txt.
MAX_ROBOTS_REDIRECTS = 5
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_SCHEMES = ("http://", "https://")


class HopRoute(Protocol):
    """How a request and its redirect hops go out (`gate.route.Route`): each hop of robots.txt
    passes the address guard as every hop of a page does, and a hop a public server sent goes
    out on the public route."""

    @property
    def session(self) -> aiohttp.ClientSession:
        """The session the next hop is sent through."""
        ...

    def guarding(self, url: URL, what: str) -> contextlib.AbstractContextManager[None]:
        """The address guard's scope for a hop to `url` (named `what` in refusals)."""
        ...

    @property
    def intranet(self) -> bool:
        """Whether the route may reach internal addresses (an intranet task's)."""
        ...

    async def after(self, answered: URL) -> "HopRoute":
        """The route of the hops after one answered from `answered`."""
        ...

    async def reached_intranet(self, final_url: URL) -> bool:
        """Whether an answer from `final_url` on this route is an intranet page."""
        ...


_UNSAFE = re.compile(r"[^A-Za-z0-9.-]")
# Under a run's status dir: a leading dot keeps it out of status scans.
POLITE_DIR = ".polite"
ROBOTS_DIR = "robots"


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """What one origin's robots.txt says, or why it could not be read."""

    parser: Protego | None  # None: no rules, everything allowed
    status: int | None  # the HTTP status robots.txt answered (None: no answer)
    unreachable: str | None = None  # why the rules are unknown (then nothing is allowed)
    # The final answer came from an internal address on an intranet route (`state.trust`):
    # what its `Sitemap:` lines may inherit. False (public) whenever in doubt.
    intranet: bool = False

    def allows(self, url: str, user_agent: str) -> bool:
        """Whether `url` may be fetched by `user_agent` (False while the rules are unknown)."""
        if self.unreachable is not None:
            return False
        return self.parser is None or bool(self.parser.can_fetch(url, user_agent))

    def crawl_delay_seconds(self, user_agent: str) -> float | None:
        """The `Crawl-delay` for `user_agent`, if robots.txt sets one."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(user_agent)
        return float(delay) if delay is not None else None


def origin_of(url: URL) -> str:
    """`scheme://host:port` of `url`, the port always written (robots.txt is per origin), an
    IPv6 host in brackets (`http://[::1]:80`: unbracketed, its colons would read as a port)."""
    return f"{url.scheme}://{host_port(url)}"


def _file_stem(origin: str) -> str:
    return _UNSAFE.sub("_", origin.replace("://", "-"))


class _Answer(NamedTuple):
    """What asking robots.txt got: the status and body (None: no answer), why not, and
    whether the final answer was an intranet page."""

    status: int | None
    body: str | None
    reason: str
    intranet: bool = False


def _rules_of(status: int, body: str, *, intranet: bool = False) -> RobotsRules:
    if 200 <= status < 300:
        return RobotsRules(Protego.parse(body), status, intranet=intranet)
    return RobotsRules(None, status, intranet=intranet)  # a 4xx: no robots.txt, so no rules


def _cacheable(status: int | None) -> bool:
    return status is not None and status < 500 and status != 429


def _read_cache(path: Path) -> tuple[RobotsRules, float] | None:
    """The cached rules and their age in seconds; None when absent or unreadable."""
    try:
        data = orjson.loads(path.read_bytes())
        fetched_at = parse_stamp(data["fetched_at"])
        status, body = int(data["status"]), str(data["body"])
        intranet = data.get("intranet") is True  # absent (an older copy): public
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring unreadable robots.txt cache %s: %s", path, exc)
        return None
    if fetched_at is None:
        logger.warning("ignoring robots.txt cache %s: no fetch time", path)
        return None
    rules = _rules_of(status, body, intranet=intranet)
    return rules, (utc_now() - fetched_at).total_seconds()


def robots_cache_dir(status_dir: Path) -> Path:
    """Where the runs over `status_dir` cache robots.txt files."""
    return Path(status_dir) / POLITE_DIR / ROBOTS_DIR


def cached_rules(status_dir: Path, origin: str, *, max_age_seconds: float) -> RobotsRules | None:
    """The robots.txt rules of `origin` as a run over `status_dir` cached them, read only.

    Nothing is fetched and nothing written: whoever needs the rules for certain (a run) loads
    them through `RobotsCache`.

    Args:
        status_dir: the folder runs keep their status files in (the cache is under it).
        origin: `scheme://host:port`, as `origin_of` spells it.
        max_age_seconds: a copy fetched longer ago than this counts as absent.

    Returns:
        The rules, or None when no fresh readable copy is cached (an unreadable one is logged).
    """
    path = robots_cache_dir(status_dir) / f"{_file_stem(origin)}.json"
    cached = _read_cache(path)
    if cached is None or cached[1] > max_age_seconds:
        return None
    return cached[0]


class RobotsCache:
    """The robots.txt rules of every origin a run meets, each fetched at most once per run."""

    def __init__(
        self,
        directory: Path,
        settings: PoliteSettings,
        *,
        user_agent: str,
        hosts: HostSlots | None = None,
    ) -> None:
        self._dir = directory
        self._hosts = hosts
        self._settings = settings
        self._user_agent = user_agent
        self._rules: dict[str, RobotsRules] = {}
        # Loads under way, by origin and TLS verification: a task that verifies certificates
        # must not get the failure of one that does not, nor the other way round.
        self._loading: dict[tuple[str, bool, int], asyncio.Task[RobotsRules]] = {}
        self.fetches = 0  # robots.txt requests this cache sent (for tests and reports)

    def known(self, origin: str) -> RobotsRules | None:
        """The rules of `origin` when already loaded in this run (no I/O)."""
        return self._rules.get(origin)

    async def rules(
        self,
        session: aiohttp.ClientSession,
        origin: str,
        *,
        proxy: str | None = None,
        verify_tls: bool = True,
        route: HopRoute | None = None,
    ) -> RobotsRules:
        """The rules of `origin`: from this run's memory, the disk cache, or a fetch through
        `session` (each redirect hop through `route`, when given).

        Concurrent callers for one origin and session share one load; a caller cancelled
        meanwhile (its step timed out) does not cancel the load the others wait for.
        """
        known = self._rules.get(origin)
        if known is not None:
            return known
        if not origin.startswith(_SCHEMES):
            # Nothing but http(s) is ever asked (a `file:` or `gopher:` origin a sitemap named).
            return RobotsRules(None, None, unreachable=f"{redact(origin)!r} is not http(s)")
        # By session too: a guarded route must not get the refusal (or the answer) of an
        # intranet route's load, nor the other way round.
        loading = (origin, verify_tls, id(session))
        task = self._loading.get(loading)
        if task is None:
            task = asyncio.ensure_future(
                self._load(session, origin, proxy, verify_tls, route, loading)
            )
            self._loading[loading] = task
        return await asyncio.shield(task)

    async def _load(
        self,
        session: aiohttp.ClientSession,
        origin: str,
        proxy: str | None,
        verify_tls: bool,
        route: HopRoute | None,
        loading: tuple[str, bool, int],
    ) -> RobotsRules:
        try:
            path = self._dir / f"{_file_stem(origin)}.json"
            rules = self._read_fresh(path)
            if rules is None:
                async with self._origin_lock(path.with_suffix(".lock")):
                    # Another process may have fetched it while we waited for the lock.
                    rules = self._read_fresh(path) or await self._fetch(
                        session, origin, proxy, verify_tls, path, route
                    )
            self._rules[origin] = rules
            return rules
        finally:
            self._loading.pop(loading, None)

    def _read_fresh(self, path: Path) -> RobotsRules | None:
        cached = _read_cache(path)
        if cached is None or cached[1] > self._settings.robots_max_age_seconds:
            return None
        return cached[0]

    @contextlib.asynccontextmanager
    async def _origin_lock(self, path: Path) -> AsyncIterator[None]:
        self._dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # another process is fetching this origin's robots.txt
                    await asyncio.sleep(_LOCK_POLL_SECONDS)
            yield
        finally:
            os.close(fd)  # closing releases the lock, also when the process is killed

    async def _fetch(
        self,
        session: aiohttp.ClientSession,
        origin: str,
        proxy: str | None,
        verify_tls: bool,
        path: Path,
        route: HopRoute | None,
    ) -> RobotsRules:
        self.fetches += 1
        # Fetching robots.txt is a request to the host like any other: it takes a slot.
        hosts, slot = self._hosts, None
        if hosts is not None:
            host = origin.split("://", 1)[1]
            slot = await hosts.acquire(host, delay_seconds=self._settings.per_host_delay_seconds)
        try:
            answer = await self._download(session, origin, proxy, verify_tls, route)
        finally:
            if hosts is not None and slot is not None:
                hosts.release(slot)
        status, body, reason, intranet = answer
        if status is not None and body is not None and _cacheable(status):
            record = {
                "origin": origin,
                "fetched_at": stamp(),
                "status": status,
                "body": body,
                "intranet": intranet,
            }
            write_json_atomic(path, record)
            return _rules_of(status, body, intranet=intranet)
        stale = _read_cache(path)
        if stale is not None:
            logger.warning(
                "robots.txt of %s unreachable (%s): using the cached copy", origin, reason
            )
            return stale[0]
        return RobotsRules(None, status, unreachable=reason)

    async def _download(
        self,
        session: aiohttp.ClientSession,
        origin: str,
        proxy: str | None,
        verify_tls: bool,
        route: HopRoute | None,
    ) -> _Answer:
        """The answer, or None and why there was none. Redirects are followed here, each hop
        through `route` (aiohttp would follow them unchecked); the answer is an intranet page
        only when `route` stayed an intranet route to its last hop, hop by hop."""
        url = URL(f"{origin}/robots.txt")
        try:
            for hop in range(MAX_ROBOTS_REDIRECTS + 1):
                # The first request is in the caller's scope (it names the request that needs
                # robots.txt); each redirect hop is checked and named on its own.
                where = f"robots.txt redirect to {redact(str(url))}"
                scope = route.guarding(url, where) if route is not None and hop else None
                sending = route.session if route is not None else session
                with scope or contextlib.nullcontext():
                    answer, target = await self._answer(sending, url, proxy, verify_tls)
                if target is None:
                    if route is None or not route.intranet:
                        return answer
                    return answer._replace(intranet=await route.reached_intranet(url))
                if route is not None:
                    route = await route.after(url)
                url = target
            # RFC 9309: past the redirects followed, robots.txt counts as unavailable (4xx).
            return _Answer(404, "", f"more than {MAX_ROBOTS_REDIRECTS} redirects")
        except (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError):
            raise  # the proxy failed, not the site: the caller tries another proxy
        except (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError):
            raise  # a TLS failure is the task's (permanent, as for its page), not the site's
        except aiohttp.ClientConnectorError as exc:
            if proxy is not None:
                raise  # through a proxy, a failed connection is the proxy's (as in retry)
            return _Answer(None, None, f"{type(exc).__name__}: {redact(str(exc)) or 'no message'}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            return _Answer(None, None, f"{type(exc).__name__}: {redact(str(exc)) or 'no message'}")

    async def _answer(
        self, session: aiohttp.ClientSession, url: URL, proxy: str | None, verify_tls: bool
    ) -> tuple[_Answer, URL | None]:
        """One request for robots.txt at `url`: the answer, or where a redirect sends it."""
        cap = self._settings.robots_max_bytes
        async with session.get(
            url,
            headers={"User-Agent": self._user_agent},
            proxy=proxy,
            ssl=verify_tls,  # True leaves it to the session's connector, as scrape does
            timeout=aiohttp.ClientTimeout(total=self._settings.robots_timeout_seconds),
            allow_redirects=False,
        ) as response:
            if proxy is not None and response.status == 407:
                raise ProxyError("the proxy refused us (HTTP 407) while reading robots.txt")
            location = response.headers.get("Location")
            if response.status in _REDIRECTS and location is not None:
                resolved = resolve_link(str(url), location)
                if resolved is None:  # not http(s): as a 4xx, no rules
                    return _Answer(404, "", f"redirect to {redact(location)!r}"), None
                return _Answer(None, None, ""), request_url(resolved)
            raw = bytearray()
            while len(raw) < cap:  # the rest is ignored, as Google does
                chunk = await response.content.read(cap - len(raw))
                if not chunk:
                    break
                raw += chunk
            # RFC 9309: robots.txt is UTF-8.
            body = raw.decode("utf-8", errors="replace")
            return _Answer(response.status, body, f"HTTP {response.status}"), None
