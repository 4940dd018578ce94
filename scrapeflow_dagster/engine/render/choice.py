"""Which pages of a `render: auto` task need a browser, learned per URL pattern within a run, as
Crawlee's adaptive crawler learns it: render a sample of each pattern's pages, compare what the
browser found with what the HTTP body holds, and render the rest of the pattern only when the
browser made a difference; a pattern judged static is sampled again now and then, as sites mix
shells and server-rendered pages under one path.

A URL's pattern is its host and its path with every segment holding a digit made a wildcard
(`/app/item/7` and `/app/item/12` are `/app/item/*`); its query is left out. "A difference": the
rendered page has a link the body has not, or more readable text by `TEXT_GAIN_BYTES` and
`TEXT_GAIN_RATIO`.

What earlier runs learned seeds a run (`RenderChoices.restore_once`, from `choice_store`): a
pattern known to need a browser renders from its first page, one known static is sampled only at
its re-checks (every `RECHECK_EVERY` of its pages, counted across runs), and a re-check that
finds a difference flips it. Each `render: auto` output carries its pattern's evidence
(`RenderChoices.evidence`), which DuckDB keeps per pattern (`render_choices`).
"""

import asyncio
import contextlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from scrapeflow_dagster.engine.state.schema import stamp, utc_now

# Pages of a new pattern rendered (and compared) before it is judged.
SAMPLE_PAGES = 3
# A pattern judged static is rendered again (and compared) once every this many pages.
RECHECK_EVERY = 20
TEXT_GAIN_BYTES = 200
TEXT_GAIN_RATIO = 1.2
_DIGIT = re.compile(r"\d")


def url_pattern(url: str) -> str:
    """`host/path` of `url` with each path segment that holds a digit made `*`."""
    parts = urlsplit(url)
    segments = ["*" if _DIGIT.search(seg) else seg for seg in parts.path.split("/")]
    return f"{parts.hostname or ''}{'/'.join(segments) or '/'}"


class Parsed(NamedTuple):
    """What a parse of a page found, as compared: its links and its text's size."""

    links: frozenset[str]
    text_bytes: int


def browser_made_a_difference(static: Parsed, rendered: Parsed) -> bool:
    """Whether the rendered page holds what the HTTP body did not (see the module)."""
    if rendered.links - static.links:
        return True
    gain = rendered.text_bytes - static.text_bytes
    return gain >= TEXT_GAIN_BYTES and rendered.text_bytes >= TEXT_GAIN_RATIO * static.text_bytes


# A pattern's judgement, as its evidence says it (`judgement`).
BROWSER = "browser"  # a compared render found a difference: every page is rendered
STATIC = "static"  # SAMPLE_PAGES compared, no difference: re-checked now and then
SAMPLING = "sampling"  # fewer compared than that, none with a difference


class Known(NamedTuple):
    """A pattern's evidence from earlier runs (DuckDB's `render_choices`, `choice_store`)."""

    sampled: int  # compared renders (samples and re-checks)
    needed: int  # of those, the ones the browser made a difference to
    seen: int  # `render: auto` pages of the pattern decided
    checked_at: datetime | None  # the last compared render's end
    checked_by: str | None  # its run


@dataclass
class _Pattern:
    sampled: int = 0  # compared renders learned from
    pending: int = 0  # compared renders under way
    needed: int = 0  # of the sampled, those the browser made a difference to
    seen: int = 0
    checked_at: datetime | None = None
    # The run of the last check when it was an earlier run's; None: this run's (DuckDB takes
    # the run id of the output that carries it: an executor does not know its run's).
    checked_by: str | None = None


def judgement(*, sampled: int, needed: int) -> str:
    """`BROWSER`, `STATIC` or `SAMPLING`, from a pattern's compared renders."""
    if needed:
        return BROWSER
    return STATIC if sampled >= SAMPLE_PAGES else SAMPLING


class Decision(NamedTuple):
    """Whether to render a page, why, and whether its render is a comparison to learn from."""

    render: bool
    reason: str
    compare: bool


class RenderChoices:
    """A run's judgement of its URL patterns (one per run, with its browser).

    Args:
        wait_guard: around a page's wait for its pattern's samples (the run's deadlines: the
            wait is not the step being slow).
    """

    def __init__(
        self, wait_guard: Callable[[], contextlib.AbstractContextManager[None]] | None = None
    ) -> None:
        self._patterns: dict[str, _Pattern] = {}
        self._wait_guard = wait_guard or contextlib.nullcontext
        self._restored = False
        # Set (and replaced) whenever a sample ends: pages waiting for a judgement look again.
        self._changed = asyncio.Event()

    async def decide(self, url: str) -> Decision:
        """Whether the page at `url` of a `render: auto` task is rendered. While its pattern's
        samples are under way, a page waits for their judgement (the run's other tasks would
        otherwise all be rendered before the first sample ends)."""
        pattern = self._patterns.setdefault(url_pattern(url), _Pattern())
        pattern.seen += 1
        # This page's place in its pattern: pages waiting for the samples all wake to the
        # same `seen`, and would all be re-checks if it were a multiple of RECHECK_EVERY.
        place = pattern.seen
        while not pattern.needed and pattern.sampled < SAMPLE_PAGES:
            if pattern.sampled + pattern.pending < SAMPLE_PAGES:
                pattern.pending += 1
                return Decision(True, f"a sample of its pattern ({pattern.sampled} judged)", True)
            changed = self._changed
            with self._wait_guard():
                await changed.wait()
        if pattern.needed:
            return Decision(True, "its pattern's pages need a browser", False)
        if place % RECHECK_EVERY == 0:
            pattern.pending += 1
            return Decision(True, "a static pattern's re-check", True)
        return Decision(False, f"its pattern's pages are static ({pattern.sampled} sampled)", False)

    def learn(self, url: str, static: Parsed, rendered: Parsed) -> bool:
        """Record a compared render of `url`; whether the browser made a difference."""
        pattern = self._patterns.setdefault(url_pattern(url), _Pattern())
        made = browser_made_a_difference(static, rendered)
        pattern.pending = max(0, pattern.pending - 1)
        pattern.sampled += 1
        pattern.needed += int(made)
        pattern.checked_at, pattern.checked_by = utc_now(), None
        self._wake()
        return made

    def restore_once(self, load: Callable[[], Mapping[str, Known]]) -> None:
        """Seed the run's patterns with what earlier runs learned, `load()`ed at the first
        call (the run's first `render: auto` page); later calls do nothing. A pattern this run
        has judged already keeps its own evidence."""
        if self._restored:
            return
        self._restored = True
        for name, known in load().items():
            if name not in self._patterns:
                self._patterns[name] = _Pattern(
                    sampled=known.sampled,
                    needed=known.needed,
                    seen=known.seen,
                    checked_at=known.checked_at,
                    checked_by=known.checked_by,
                )

    def evidence(self, url: str) -> dict[str, Any]:
        """What the run knows of `url`'s pattern now, as a `render: auto` output holds it
        (DuckDB's `render_choices` keeps the largest counts of these: the newest)."""
        name = url_pattern(url)
        pattern = self._patterns.get(name) or _Pattern()
        found: dict[str, Any] = {
            "url_pattern": name,
            "judgement": judgement(sampled=pattern.sampled, needed=pattern.needed),
            "pages_sampled": pattern.sampled,
            "pages_browser_needed": pattern.needed,
            "pages_seen": pattern.seen,
            "checked_at": stamp(pattern.checked_at) if pattern.checked_at else None,
        }
        if pattern.checked_by is not None:
            found["checked_by"] = pattern.checked_by
        return found

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def forget_sample(self, url: str) -> None:
        """A compared render that did not end (the page failed): its turn goes back."""
        pattern = self._patterns.get(url_pattern(url))
        if pattern is not None:
            pattern.pending = max(0, pattern.pending - 1)
        self._wake()
