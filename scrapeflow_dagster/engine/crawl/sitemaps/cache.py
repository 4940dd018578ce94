"""Sitemap files as the runs' robots.txt copies are kept: a file read once is not asked again
while it is younger than `robots_max_age_seconds`, and after that it is asked conditionally
(If-None-Match / If-Modified-Since): a crawl run again over a site whose sitemaps did not change
sends no request for them.

One JSON file per sitemap URL and trust under `<status dir>/.polite/sitemaps/`, written
atomically; an unreadable one counts as absent (logged).
"""

import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path

import orjson

from scrapeflow_dagster.engine.polite.robots import POLITE_DIR
from scrapeflow_dagster.engine.state.atomic import write_json_atomic
from scrapeflow_dagster.engine.state.schema import parse_stamp, stamp, utc_now

logger = logging.getLogger(__name__)

SITEMAPS_DIR = "sitemaps"


@dataclass(frozen=True)
class CachedSitemap:
    """A sitemap file as last read: its text, where it was answered from, whether from an
    intranet page (`state.trust`), its validators, and its age."""

    text: str
    final_url: str
    intranet: bool
    etag: str | None
    last_modified: str | None
    age_seconds: float

    def conditional(self) -> dict[str, str]:
        """The headers that ask whether it changed since."""
        headers = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


def _path(status_dir: Path, url: str, trust: str | None) -> Path:
    digest = hashlib.sha256(f"{trust or ''} {url}".encode()).hexdigest()[:32]
    return Path(status_dir) / POLITE_DIR / SITEMAPS_DIR / f"{digest}.json"


def cached_sitemap(status_dir: Path, url: str, trust: str | None) -> CachedSitemap | None:
    """The copy of sitemap `url` read with `trust` (None: a user's own), if one is kept."""
    path = _path(status_dir, url, trust)
    try:
        data = orjson.loads(path.read_bytes())
        fetched = parse_stamp(data["fetched_at"])
        if data["url"] != url or fetched is None:
            raise ValueError("another sitemap's copy, or no fetch time")
        return CachedSitemap(
            text=str(data["text"]),
            final_url=str(data["final_url"]),
            intranet=data["intranet"] is True,
            etag=data.get("etag"),
            last_modified=data.get("last_modified"),
            age_seconds=(utc_now() - fetched).total_seconds(),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring unreadable sitemap copy %s: %s", path, exc)
        return None


def keep_sitemap(
    status_dir: Path,
    url: str,
    trust: str | None,
    *,
    text: str,
    final_url: str,
    intranet: bool,
    headers: dict[str, str],
) -> None:
    """Keep the copy of sitemap `url` just read with `trust` (its validators from `headers`)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    path = _path(status_dir, url, trust)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "url": url,
        "fetched_at": stamp(),
        "final_url": final_url,
        "intranet": intranet,
        "etag": lowered.get("etag"),
        "last_modified": lowered.get("last-modified"),
        "text": text,
    }
    write_json_atomic(path, record, indent=False)


def touch_sitemap(status_dir: Path, url: str, trust: str | None, copy: CachedSitemap) -> None:
    """Note that the kept copy was confirmed unchanged now (a 304)."""
    keep_sitemap(
        status_dir,
        url,
        trust,
        text=copy.text,
        final_url=copy.final_url,
        intranet=copy.intranet,
        headers={
            **({"ETag": copy.etag} if copy.etag else {}),
            **({"Last-Modified": copy.last_modified} if copy.last_modified else {}),
        },
    )
