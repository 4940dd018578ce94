"""Which pages of a `render: auto` task need a browser, learned per URL pattern within a run, as
Crawlee's adaptive crawler learns it: render a sample of each pattern's pages, compare what the
browser found with what the HTTP body holds, and render the rest of the pattern only when the
browser made a difference; a pattern judged static is sampled again now and then, as sites mix
shells and server-rendered pages under one path.

A URL's pattern is its host and its path with every segment holding a digit made a wildcard
(`/app/item/7` and `/app/item/12` are `/app/item/*`); its query is left out. "A difference": the
rendered page has a link the body has not, or more readable text by `TEXT_GAIN_BYTES` and
`TEXT_GAIN_RATIO`.
"""

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

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


@dataclass
class _Pattern:
    sampled: int = 0  # compared renders learned from
    pending: int = 0  # compared renders under way
    needed: int = 0  # of the sampled, those the browser made a difference to
    seen: int = 0


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
        # Set (and replaced) whenever a sample ends: pages waiting for a judgement look again.
        self._changed = asyncio.Event()

    async def decide(self, url: str) -> Decision:
        """Whether the page at `url` of a `render: auto` task is rendered. While its pattern's
        samples are under way, a page waits for their judgement (the run's other tasks would
        otherwise all be rendered before the first sample ends)."""
        pattern = self._patterns.setdefault(url_pattern(url), _Pattern())
        pattern.seen += 1
        while not pattern.needed and pattern.sampled < SAMPLE_PAGES:
            if pattern.sampled + pattern.pending < SAMPLE_PAGES:
                pattern.pending += 1
                return Decision(True, f"a sample of its pattern ({pattern.sampled} judged)", True)
            changed = self._changed
            with self._wait_guard():
                await changed.wait()
        if pattern.needed:
            return Decision(True, "its pattern's pages need a browser", False)
        if pattern.seen % RECHECK_EVERY == 0:
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
        self._wake()
        return made

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def forget_sample(self, url: str) -> None:
        """A compared render that did not end (the page failed): its turn goes back."""
        pattern = self._patterns.get(url_pattern(url))
        if pattern is not None:
            pattern.pending = max(0, pattern.pending - 1)
        self._wake()
