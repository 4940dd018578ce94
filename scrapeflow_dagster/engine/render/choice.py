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

import re
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
    """A run's judgement of its URL patterns (one per run, with its browser)."""

    def __init__(self) -> None:
        self._patterns: dict[str, _Pattern] = {}

    def decide(self, url: str) -> Decision:
        """Whether the page at `url` of a `render: auto` task is rendered."""
        pattern = self._patterns.setdefault(url_pattern(url), _Pattern())
        pattern.seen += 1
        if pattern.needed:
            return Decision(True, "its pattern's pages need a browser", False)
        if pattern.sampled + pattern.pending < SAMPLE_PAGES:
            pattern.pending += 1
            return Decision(True, f"a sample of its pattern ({pattern.sampled} judged)", True)
        if pattern.sampled < SAMPLE_PAGES:
            # Not judged yet: rendered, so that nothing a browser would find is missed.
            return Decision(True, "its pattern is being sampled", False)
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
        return made

    def forget_sample(self, url: str) -> None:
        """A compared render that did not end (the page failed): its turn goes back."""
        pattern = self._patterns.get(url_pattern(url))
        if pattern is not None:
            pattern.pending = max(0, pattern.pending - 1)

    def judged(self) -> dict[str, str]:
        """Each pattern's judgement so far: `browser`, `static` or `sampling`."""
        return {
            name: "browser" if p.needed else "static" if p.sampled >= SAMPLE_PAGES else "sampling"
            for name, p in self._patterns.items()
        }
