"""Task params beyond the request: the crawl settings (`max_depth`, `scope`, `allow`, `deny`,
`max_pages`, `extract`, `render`, the `revisit_*` bounds) a seed carries and its discovered
tasks inherit with their `depth`, `parent` and `crawl` (the seed's key). One owner for their
names, defaults and validation.
"""

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scrapeflow_dagster.engine.state.schema import Params

# Crawl params (see `crawl_settings`): set on a seed, copied to every task discovered from it.
MAX_DEPTH = "max_depth"  # links followed up to this many hops from the seed (0: none)
SCOPE = "scope"  # "host" (the seed's host) or "domain" (its registered domain)
ALLOW = "allow"  # URL regexes: when given, a link must match one of them
DENY = "deny"  # URL regexes: a link matching one of them is never followed
MAX_PAGES = "max_pages"  # tasks the whole crawl may hold, the seed included
EXTRACT = "extract"  # the selector set whose fields `pages` takes (`engine.extract`)
RENDER = "render"  # true / "auto": the `render` step runs the page in a browser (`engine.render`)
# The render modes a task's `render` param gives (`render_mode`).
RENDER_OFF, RENDER_ON, RENDER_AUTO = "off", "on", "auto"
# A page's revisit bounds in seconds (`engine.revisit.rule`), for this task and those found from it.
REVISIT_MIN = "revisit_min_seconds"
REVISIT_MAX = "revisit_max_seconds"
REVISIT_INITIAL = "revisit_initial_seconds"
REVISIT_SETTINGS = (REVISIT_MIN, REVISIT_MAX, REVISIT_INITIAL)
# Set on discovered tasks only.
DEPTH = "depth"  # hops from the seed
PARENT = "parent"  # the key of the task whose page linked here
CRAWL = "crawl"  # the seed's key: the crawl a task belongs to
CRAWL_SETTINGS = (MAX_DEPTH, SCOPE, ALLOW, DENY, MAX_PAGES, EXTRACT, RENDER, *REVISIT_SETTINGS)
SCOPES = ("host", "domain")
# A selector set's name is a file name in the data folder and a task param: no path, no spaces.
_SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


def set_name_error(name: object) -> str | None:
    """Why `name` cannot name a selector set (`engine.extract`), or None when it can."""
    if not isinstance(name, str) or not _SET_NAME.match(name):
        return (
            f"selector set name {name!r} must be 1-100 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit"
        )
    return None


@dataclass(frozen=True)
class CrawlSettings:
    """The crawl params of a task, validated; defaults when absent (a task that is not followed)."""

    max_depth: int = 0
    scope: str = "host"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    max_pages: int | None = None
    extract: str | None = None
    render: str = RENDER_OFF
    revisit: tuple[tuple[str, float], ...] = ()  # the REVISIT_SETTINGS given, in seconds
    depth: int = 0
    parent: str | None = None
    crawl: str | None = None

    def as_params(self) -> Params:
        """The crawl settings as stored params (defaults left out, patterns as lists)."""
        params: Params = {MAX_DEPTH: self.max_depth, SCOPE: self.scope, DEPTH: self.depth}
        for name, value in ((ALLOW, self.allow), (DENY, self.deny)):
            if value:
                params[name] = list(value)
        if self.render != RENDER_OFF:
            params[RENDER] = True if self.render == RENDER_ON else RENDER_AUTO
        params.update(self.revisit)
        for name, other in (
            (MAX_PAGES, self.max_pages),
            (EXTRACT, self.extract),
            (PARENT, self.parent),
            (CRAWL, self.crawl),
        ):
            if other is not None:
                params[name] = other
        return params


def _count(params: Mapping[str, Any], name: str, *, minimum: int) -> int | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def _patterns(params: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = params.get(name)
    if value is None or value == "" or value == []:
        return ()
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)  # a CSV cell holding a JSON list
        except ValueError as exc:
            raise ValueError(f"{name} is not a JSON list of patterns: {exc}") from None
    patterns = [value] if isinstance(value, str) else value
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise ValueError(f"{name} must be a regex or a list of regexes, got {value!r}")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{name} pattern {pattern!r} is not a valid regex: {exc}") from None
    return tuple(patterns)


_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no", "")


def render_mode(params: Mapping[str, Any]) -> str:
    """How a task's page is rendered, from its `render` param: `RENDER_ON` (true, and a CSV
    cell's `true`, `1`, `yes`), `RENDER_AUTO` (`auto`: where the run finds it needed) or
    `RENDER_OFF` (absent, false, `0`, `no`).

    Raises:
        ValueError: naming the param when it holds anything else.
    """
    value = params.get(RENDER)
    if value is None or isinstance(value, bool):
        return RENDER_ON if value else RENDER_OFF
    if isinstance(value, str):
        word = value.strip().lower()
        if word == RENDER_AUTO:
            return RENDER_AUTO
        if word in _TRUE + _FALSE:
            return RENDER_ON if word in _TRUE else RENDER_OFF
    raise ValueError(f"{RENDER} must be true, false or auto, got {value!r}")


def revisit_seconds(params: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """The revisit bounds among `params` (`REVISIT_SETTINGS`), as seconds.

    Raises:
        ValueError: naming the param that is not a positive number of seconds.
    """
    found = []
    for name in REVISIT_SETTINGS:
        value = params.get(name)
        if value is None or value == "":
            continue
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        if isinstance(value, bool) or not 0 < seconds < math.inf:
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        found.append((name, seconds))
    bounds = dict(found)
    if bounds.get(REVISIT_MIN, 0) > bounds.get(REVISIT_MAX, math.inf):
        raise ValueError(
            f"{REVISIT_MIN} ({bounds[REVISIT_MIN]:g}) must not be more than {REVISIT_MAX} "
            f"({bounds[REVISIT_MAX]:g})"
        )
    return tuple(found)


def crawl_settings(params: Mapping[str, Any]) -> CrawlSettings:
    """The crawl settings among `params`, validated (CSV cells as text are converted).

    Raises:
        ValueError: naming the param: a negative or non-integer depth or budget, an unknown
            scope, a pattern that is not a valid regex.
    """
    scope = params.get(SCOPE) or "host"
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    parent, crawl = params.get(PARENT), params.get(CRAWL)
    extract = params.get(EXTRACT) or None
    if extract is not None:
        problem = set_name_error(extract)
        if problem:
            raise ValueError(problem)
    for name, value in ((PARENT, parent), (CRAWL, crawl)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a task key, got {value!r}")
    return CrawlSettings(
        max_depth=_count(params, MAX_DEPTH, minimum=0) or 0,
        scope=scope,
        allow=_patterns(params, ALLOW),
        deny=_patterns(params, DENY),
        max_pages=_count(params, MAX_PAGES, minimum=1),
        extract=extract,
        render=render_mode(params),
        revisit=revisit_seconds(params),
        depth=_count(params, DEPTH, minimum=0) or 0,
        parent=parent or None,
        crawl=crawl or None,
    )


def normalise_crawl_params(params: Params) -> Params:
    """`params` with their crawl settings validated and typed (as `crawl_settings` reads them);
    params without any crawl setting come back unchanged, so their stored form never changes.

    Raises:
        ValueError: see `crawl_settings`.
    """
    given = [name for name in (*CRAWL_SETTINGS, DEPTH, PARENT, CRAWL) if name in params]
    if not given:
        return params
    settings = crawl_settings(params)
    typed = settings.as_params()
    return {
        **{k: v for k, v in params.items() if k not in typed},
        **{k: typed[k] for k in typed if k in given},
    }
